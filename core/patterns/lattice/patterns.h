#pragma once
// The Lattice conversion patterns (seed 000), one file each, in registry order.
#include "core/pattern/pattern.h"

namespace lattice {

const Pattern& sppf_maxpool_pattern();           // sppf.cc
const Pattern& sppf_maxpool_advanced_pattern();  // sppf.cc
const Pattern& stride2_asym_pad_conv_maxpool_pattern();  // stride2_asym_pad.cc
const Pattern& stride2_conv_bn_relu_pattern();   // stride2_conv.cc
const Pattern& maxpool2d_pattern();              // maxpool.cc
const Pattern& global_avg_pool_pattern();        // global_pool.cc
const Pattern& conv2d_pattern();                 // conv.cc

// Shared predicate: a stride-1 MaxPool of an SPPF block (known input shape, feeding a Concat).
bool is_sppf_maxpool(const MatchContext& ctx, int node);

}  // namespace lattice
