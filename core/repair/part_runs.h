#pragma once
// Which part of a model each step of the repair runs, and which of its tensors the caller holds
// between steps. The caller (the JavaScript that runs onnxruntime) holds the values; this decides
// the names: a step runs only the nodes between what is held and what is asked, holds what nodes
// not yet run still read (and what the caller said it will ask for), and lets the rest go.
// A step's `commit` names are final (their nodes will not run again); its `peek` names are
// computed aside, for a layer whose weights are about to change, and become final only when the
// caller adopts them (the layer kept its weights).
#include <string>
#include <unordered_set>
#include <vector>

#include "core/repair/part.h"
#include "core/util/result.h"

namespace lattice::repair {

struct PartRun {
  Part part;  // no nodes, no bytes: everything asked is held already
  std::vector<std::string> outputs;
  // Among the part's inputs and outputs, those that depend on the samples: fed a batch at a time
  // and joined along axis 0 (the rest, an exporter's shapes computed from constants, are the same
  // for every batch: held once and given whole).
  std::vector<std::string> per_sample;
  std::vector<std::string> hold;   // outputs held from now on
  std::vector<std::string> aside;  // outputs computed aside: held only if adopted
  std::vector<std::string> drop;   // held tensors no node left to run reads, which nobody will ask for
};

class PartRuns {
 public:
  // `inputs`: the model's inputs the caller holds from the start; `keep`: names the caller will
  // ask for later.
  PartRuns(const std::vector<std::string>& inputs, const std::vector<std::string>& keep);

  // `held`: every tensor the caller holds now.
  Result<PartRun> next(const ModelParts& model, const GivenTensors& held, const std::vector<std::string>& commit,
                       const std::vector<std::string>& peek);
  // The last step's nodes computed aside are final after all (the model is as it was then): what
  // to let go among `held` (which now holds their outputs too).
  std::vector<std::string> adopt(const ModelParts& model, const std::vector<std::string>& held);
  // The caller has what it asked for `name`: it need not be held for its sake any more.
  void release(const std::string& name) { keep_.erase(name); }

 private:
  void mark_done(const ModelParts& model, const std::vector<int>& nodes);
  bool finished(const ModelParts& model, int node) const;
  // Whether a node not run yet (and not in `except`) reads `name`.
  bool still_read(const ModelParts& model, const std::string& name, const std::unordered_set<int>& except) const;
  std::vector<std::string> unread(const ModelParts& model, const std::vector<std::string>& held) const;

  std::vector<std::string> inputs_;
  std::unordered_set<std::string> done_, keep_;
  std::vector<int> aside_;  // the last step's nodes computed aside
};

}  // namespace lattice::repair
