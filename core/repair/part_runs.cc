#include "core/repair/part_runs.h"

#include <algorithm>

namespace lattice::repair {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

PartRuns::PartRuns(const std::vector<std::string>& inputs, const std::vector<std::string>& keep)
    : inputs_(inputs), done_(inputs.begin(), inputs.end()), keep_(keep.begin(), keep.end()) {}

void PartRuns::mark_done(const ModelParts& model, const std::vector<int>& nodes) {
  for (int n : nodes) {
    for (const auto& o : model.model().graph().node(n).output()) {
      if (!o.empty()) done_.insert(o);
    }
  }
}

bool PartRuns::finished(const ModelParts& model, int node) const {
  const auto& outputs = model.model().graph().node(node).output();
  return std::all_of(outputs.begin(), outputs.end(), [&](const std::string& o) { return o.empty() || done_.contains(o); });
}

bool PartRuns::still_read(const ModelParts& model, const std::string& name, const std::unordered_set<int>& except) const {
  auto open = [&](int node) { return !except.contains(node) && !finished(model, node); };
  const auto& explicit_readers = model.view().consumers(name);
  const auto& inner_readers = model.view().implicit_readers(name);
  return std::any_of(explicit_readers.begin(), explicit_readers.end(), open) ||
         std::any_of(inner_readers.begin(), inner_readers.end(), open);
}

std::vector<std::string> PartRuns::unread(const ModelParts& model, const std::vector<std::string>& held) const {
  std::vector<std::string> out;
  for (const auto& name : held) {
    if (!keep_.contains(name) && !still_read(model, name, {})) out.push_back(name);
  }
  return out;
}

Result<PartRun> PartRuns::next(const ModelParts& model, const GivenTensors& held, const std::vector<std::string>& commit,
                               const std::vector<std::string>& peek) {
  aside_.clear();
  PartRun run;
  std::vector<std::string> to_commit, to_peek;
  for (const auto& name : commit) {
    if (!held.contains(name) && !contains(to_commit, name)) to_commit.push_back(name);
  }
  for (const auto& name : peek) {
    if (!held.contains(name) && !contains(to_commit, name) && !contains(to_peek, name)) to_peek.push_back(name);
  }
  if (to_commit.empty() && to_peek.empty()) return run;

  auto is_held = [&](const std::string& name) { return held.contains(name); };
  auto final_list = model.nodes_for(is_held, to_commit);
  std::vector<std::string> asked = to_commit;
  asked.insert(asked.end(), to_peek.begin(), to_peek.end());
  auto ran_list = model.nodes_for(is_held, asked);
  const std::unordered_set<int> final_nodes(final_list.begin(), final_list.end());
  const std::unordered_set<int> ran(ran_list.begin(), ran_list.end());
  // The outputs of `nodes` still read by a node not run yet past `except`, or asked for later.
  const auto& graph = model.model().graph();
  auto outputs_read = [&](const std::vector<int>& nodes, const std::unordered_set<int>& except,
                          const std::vector<std::string>& leave_out) {
    std::vector<std::string> out;
    for (int n : nodes) {
      for (const auto& o : graph.node(n).output()) {
        if (o.empty() || contains(leave_out, o)) continue;
        if (keep_.contains(o) || still_read(model, o, except)) out.push_back(o);
      }
    }
    return out;
  };
  auto live = outputs_read(final_list, final_nodes, to_commit);
  std::vector<int> besides;
  for (int n : ran_list) {
    if (!final_nodes.contains(n)) besides.push_back(n);
  }
  auto aside_live = outputs_read(besides, ran, to_peek);

  for (const auto* list : {&to_commit, &to_peek, &live, &aside_live}) {
    for (const auto& name : *list) {
      if (!contains(run.outputs, name)) run.outputs.push_back(name);
    }
  }
  auto part = model.cut(held, run.outputs);
  if (!part) return part.error();
  run.part = std::move(part).value();

  // What depends on the samples: the model's inputs and what is computed from them.
  std::unordered_set<std::string> per_sample(inputs_.begin(), inputs_.end());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& reads = model.reads(i);
    if (std::none_of(reads.begin(), reads.end(), [&](const std::string& r) { return per_sample.contains(r); })) continue;
    for (const auto& o : graph.node(i).output()) {
      if (!o.empty()) per_sample.insert(o);
    }
  }
  for (const auto* list : {&run.part.inputs, &run.outputs}) {
    for (const auto& name : *list) {
      if (per_sample.contains(name)) run.per_sample.push_back(name);
    }
  }

  mark_done(model, final_list);
  run.hold = to_commit;
  run.hold.insert(run.hold.end(), live.begin(), live.end());
  std::vector<std::string> now_held;
  for (const auto& [name, tensor] : held) now_held.push_back(name);
  for (const auto& name : run.hold) {
    if (!held.contains(name)) now_held.push_back(name);
  }
  run.drop = unread(model, now_held);
  run.aside = to_peek;
  run.aside.insert(run.aside.end(), aside_live.begin(), aside_live.end());
  aside_ = std::move(besides);
  return run;
}

std::vector<std::string> PartRuns::adopt(const ModelParts& model, const std::vector<std::string>& held) {
  mark_done(model, aside_);
  aside_.clear();
  return unread(model, held);
}

}  // namespace lattice::repair
