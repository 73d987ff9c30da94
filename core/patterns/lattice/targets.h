#pragma once
// The Lattice targets as data: one LatticeTarget entry each (accepted kernels and strides, the
// MaxPool form, the SPPF kernel set, the operator rows, the patterns in the order they run and
// where the facts come from). The patterns, the audit, the catalogue and `onnx-lattice hardware`
// all read these entries; a new target is a new entry in lattice_targets().
#include <vector>

#include "core/pattern/pattern.h"
#include "core/pattern/target.h"
#include "core/patterns/lattice/hardware.h"

namespace lattice {

// The Lattice conversion patterns in the order a Lattice target runs them, with `sppf` (which
// names the SPPF rewrite in the report) first: SPPF before MaxPool snapping (its pools must not
// be snapped), the stride-2 max-pool chains before the other stride-2 chains, Conv snapping last.
std::vector<const Pattern*> lattice_conversion(const Pattern& sppf);

// The built-in Lattice targets, the default first.
std::vector<Target> lattice_targets();

}  // namespace lattice
