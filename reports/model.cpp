// The report model: the study as read, and report.json built from it. Every number that the analysis
// computed is copied from analysis.json as it is (the tests compare them); the report adds only what
// the analysis does not say — the power of each test, the setup, per-op rounding summaries, symmetry.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model.h"
#include "saddlescope/analysis/op_summary.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/run_dir.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;

using analysis::AttributionResult;
using analysis::Comparison;
using analysis::RunResult;
using analysis::SampleTest;
using store::encode;

// Modification time in seconds (0 when the file is missing).
double mtime(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
}

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }


// Whether the analysis has the planned run: by run id, or by group and seed — a run whose study leaves
// `threads` out resolves to the cores of the machine that reads the plan, so a report made elsewhere
// than the runs (the H200 host's 16 cores, read on a laptop) plans other run ids for the same runs.
bool planned_run_present(const StudyData& study, const PlannedRun& p) {
  for (const auto& r : study.runs) {
    const RunResult& e = r.entry;
    if (e.run_id == p.run_id) return true;
    if (e.group == p.group && e.seed == p.seed) return true;
  }
  return false;
}

template <class Row>
void read_into(const store::RunDir& run, Result<std::vector<Row>> (store::RunDir::*reader)() const, const char* file,
               std::vector<Row>& out, std::vector<std::string>& notes) {
  if (!run.has(file)) return;
  auto rows = (run.*reader)();
  if (rows) out = std::move(*rows);
  else notes.push_back(rows.status().message());
}

// The flat leaves of a JSON object as "a.b" -> text (arrays joined with spaces).
void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array() && std::any_of(j.begin(), j.end(), [](const json& e) { return e.is_structured(); })) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j.at(i), prefix + "." + std::to_string(i), out);
  } else if (j.is_array()) {
    std::string s;
    for (const auto& e : j) s += (s.empty() ? "" : " ") + (e.is_string() ? e.get<std::string>() : e.dump());
    out[prefix] = s;
  } else {
    out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
  }
}

// One line naming a machine: host, CPU, GPU, the libraries that decide the arithmetic.
std::string machine_summary(const std::map<std::string, std::string>& f) {
  auto get = [&](const std::string& k) {
    auto it = f.find(k);
    return it == f.end() ? std::string("?") : it->second;
  };
  std::string gpu = "no GPU";
  if (f.count("gpu.devices.0.name")) {
    int n = 0;
    while (f.count("gpu.devices." + std::to_string(n) + ".name")) ++n;
    gpu = fmt::format("{}× {} (driver {}, CUDA {}, cuDNN {})", n, get("gpu.devices.0.name"), get("gpu.driver"),
                      get("gpu.runtime_cuda"), get("gpu.cudnn"));
  }
  return fmt::format("host {}: {} ({} cores), {}; LibTorch {}, BLAS {} {}, {}, {}; saddlescope {}", get("host"),
                     get("cpu.model"), get("cpu.cores"), gpu, get("libtorch.version"), get("blas.name"),
                     get("blas.openblas_core") == "?" ? std::string() : "(" + get("blas.openblas_core") + " kernels)",
                     get("compiler"), get("os"), get("toolkit.commit"));
}

SetupModel setup_model(const StudyData& study) {
  // One representative config per group; a key is an axis when its value differs between groups and
  // is one value within each group (seeds vary within a group and are not axes).
  std::map<std::string, std::vector<const RunData*>> by_group;
  for (const auto& r : study.runs)
    if (r.manifest && r.entry.group) by_group[*r.entry.group].push_back(&r);
  std::set<std::string> keys, within_varies;
  for (const auto& [g, runs] : by_group)
    for (const RunData* r : runs)
      for (auto it = r->manifest->config.begin(); it != r->manifest->config.end(); ++it) {
        keys.insert(it.key());
        if (runs.front()->manifest->config.value(it.key(), json()) != it.value()) within_varies.insert(it.key());
      }
  SetupModel m;
  for (const auto& k : keys) {
    if (within_varies.count(k)) continue;
    std::set<std::string> values;
    for (const auto& [g, runs] : by_group) values.insert(runs.front()->manifest->config.value(k, json()).dump());
    if (values.size() > 1) m.axes.push_back(k);
    else if (!by_group.empty()) m.common[k] = by_group.begin()->second.front()->manifest->config.value(k, json());
  }
  for (const auto& name : study.group_names) {
    SetupGroup g{name, {}};
    auto it = by_group.find(name);
    if (it != by_group.end())
      for (const auto& k : m.axes) g.config[k] = it->second.front()->manifest->config.value(k, json());
    m.groups.push_back(std::move(g));
  }
  // The matrix: every run the analysis lists and every planned run it does not.
  for (const auto& r : study.runs) {
    const RunResult& e = r.entry;
    std::string note = e.skipped.value_or("");
    if (r.manifest && !r.manifest->error.empty()) note = r.manifest->error;
    if (r.newer_than_analysis) note += std::string(note.empty() ? "" : "; ") + "changed after the analysis";
    for (const auto& n : r.notes) note += std::string(note.empty() ? "" : "; ") + n;
    m.runs.push_back({e.run_id, e.group, e.seed, e.status, !e.skipped, e.steps_completed, note});
  }
  for (const auto& p : study.plan)
    if (!planned_run_present(study, p)) m.not_run.push_back({p.run_id, p.label, p.group, p.seed, p.state, p.note});
  for (const auto& d : study.unanalysed)
    m.not_run.push_back({base_name(d), base_name(d), std::nullopt, std::nullopt, "not analysed",
                         "its directory is newer than the analysis: rerun saddlescope analyze"});
  // Fingerprints, deduplicated: threads and environment variables are the config's, not the machine's.
  std::map<std::string, size_t> seen;
  for (const auto& r : study.runs) {
    if (!r.manifest) continue;
    json fp = r.manifest->fingerprint;
    fp.erase("threads");
    fp.erase("env");
    auto [it, fresh] = seen.emplace(fp.dump(), m.machines.size());
    if (fresh) {
      Machine mc;
      flatten(fp, "", mc.flat);
      mc.summary = machine_summary(mc.flat);
      mc.fingerprint = fp;
      m.machines.push_back(std::move(mc));
    }
    Machine& mc = m.machines[it->second];
    ++mc.runs;
    if (std::find(mc.groups.begin(), mc.groups.end(), r.entry.group) == mc.groups.end()) mc.groups.push_back(r.entry.group);
  }
  m.definitions = study.analysis.definitions;
  return m;
}

LossModel loss_model(const StudyData& study) {
  LossModel m;
  for (const auto& g : study.analysis.groups) m.groups.push_back({g.name, g.n_runs, g.final_loss});
  for (const auto& r : study.runs) {
    const RunResult& e = r.entry;
    if (e.learns && !*e.learns) m.not_learning.push_back({e.run_id, e.group, e.seed, e.eval_mse, e.baseline_mse});
  }
  m.loss_window = study.analysis.definitions.loss_window;
  return m;
}

SaddlesModel saddles_model(const StudyData& study) {
  SaddlesModel m;
  m.groups = study.analysis.groups;
  for (const auto& r : study.runs) {
    const RunResult& e = r.entry;
    if (e.skipped) continue;
    m.runs.push_back({e.run_id, e.group, e.seed, e.episodes, e.episodes_note, e.probe_count, e.probe_interval,
                      e.gradient_scale, e.time_in_saddle, e.level_crossings});
    if (e.episodes) m.n_episodes += static_cast<int64_t>(e.episodes->size());
  }
  m.theory = study.analysis.theory;
  return m;
}

RoundingModel rounding_model(const StudyData& study) {
  RoundingModel m;
  for (const auto& name : study.group_names) {
    std::vector<store::OpRow> rows;
    int64_t runs = 0;
    for (const auto& r : study.runs)
      if (r.entry.group == name && !r.ops.empty()) {
        rows.insert(rows.end(), r.ops.begin(), r.ops.end());
        ++runs;
      }
    if (rows.empty()) continue;
    RoundingGroup g{name, runs, analysis::summarize_ops(rows)};
    for (const auto& s : g.ops)
      if (s.zero_terms > 0)
        m.zero_term_callouts.push_back(fmt::format("{}: {} {} gave a nonzero result in {} of {} samples whose every term "
                                                   "was exactly zero — no rounding of those terms gives that: the kernel "
                                                   "computes something else.",
                                                   name, s.op, s.phase, s.zero_terms, s.samples));
    m.groups.push_back(std::move(g));
  }
  return m;
}

DivergenceModel divergence_model(const StudyData& study) { return {study.analysis.divergence, study.analysis.attribution}; }

// The noise budget as the analysis wrote it (absent in analyses before it: no groups).
NoiseModel noise_model(const StudyData& study) {
  const auto& n = study.analysis.noise_budget;
  if (!n) return {NAN, {}};
  return {n->negligible_ratio, n->groups};
}

SymmetryModel symmetry_model(const StudyData& study) {
  SymmetryModel m;
  for (const auto& r : study.runs) {
    if (r.symmetry.empty()) continue;
    std::map<std::string, SymmetryLayer> layers;
    for (const auto& row : r.symmetry) {
      auto [it, fresh] = layers.try_emplace(row.layer);
      SymmetryLayer& l = it->second;
      if (fresh) {
        l.layer = row.layer;
        l.units = row.units;
        l.identical_pairs_start = row.identical_pairs;
        l.first_step = row.step;
      }
      // Symmetry broke at the first probe step with fewer identical pairs than at the start.
      if (!l.broke_at_step && row.identical_pairs < l.identical_pairs_start) l.broke_at_step = row.step;
      l.identical_pairs_end = row.identical_pairs;
      l.last_step = row.step;
      l.min_relative_distance_end = row.min_relative_distance;
    }
    SymmetryRun run{r.entry.run_id, r.entry.group, r.entry.seed, {}};
    for (auto& [name, l] : layers) run.layers.push_back(std::move(l));
    m.runs.push_back(std::move(run));
  }
  return m;
}

}  // namespace

std::string run_label(const RunResult& run) { return fmt::format("{} s{}", run.group.value_or("?"), run.seed); }

std::string show(double v) {
  if (!std::isfinite(v)) return "—";
  return v == 0 ? "0" : fmt::format("{:.4g}", v);
}

std::string show(int64_t v) { return std::to_string(v); }

std::string show_percent(double v) { return std::isfinite(v) ? fmt::format("{:+.3g}%", 100 * v) : "—"; }

std::string show_p(double p) {
  if (!std::isfinite(p)) return "—";
  return p < 1e-4 ? "< 0.0001" : fmt::format("{:.4f}", p);
}

std::string show(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    const double x = v.get<double>();
    if (x == 0) return "0";
    return fmt::format("{:.4g}", x);
  }
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return "—";
}

std::string show_percent(const json& v) {
  return v.is_number() ? fmt::format("{:+.3g}%", 100 * v.get<double>()) : "—";
}

std::string show_p(const json& v) {
  if (!v.is_number()) return "—";
  const double p = v.get<double>();
  return p < 1e-4 ? "< 0.0001" : fmt::format("{:.4f}", p);
}

Result<StudyData> load_study(const std::string& dir, const ReportOptions& options) {
  StudyData s;
  s.dir = dir;
  s.name = options.study_name.empty() ? base_name(dir == "/" ? dir : dir.substr(0, dir.find_last_not_of('/') + 1))
                                      : options.study_name;
  s.plan = options.plan;
  const std::string path = dir + "/analysis/analysis.json";
  if (!store::file_exists(path))
    return Status::Error(path + ": no analysis (run `saddlescope analyze " + dir + "` first)");
  auto text = store::read_file(path, 1ull << 30, "1 GiB");
  if (!text) return text.status();
  auto j = store::parse_json(*text, path);
  if (!j) return j.status();
  auto a = analysis::decode_analysis(*j);
  if (!a) return Status::Error(path + ": " + a.status().message());
  s.analysis = std::move(*a);
  for (const auto& g : s.analysis.groups) s.group_names.push_back(g.name);
  const double analysed_at = mtime(path);
  std::set<std::string> listed;
  for (const RunResult& e : s.analysis.runs) {
    RunData r;
    r.entry = e;
    const std::string run_path = dir + "/" + e.path;
    listed.insert(base_name(run_path));
    auto run = store::RunDir::open(run_path);
    if (!run) {
      r.notes.push_back(run.status().message());
    } else {
      r.manifest = run->manifest();
      r.newer_than_analysis = mtime(run_path + "/manifest.json") > analysed_at;
      read_into(*run, &store::RunDir::metrics, store::kMetrics.file, r.metrics, r.notes);
      read_into(*run, &store::RunDir::curvature, store::kCurvature.file, r.curvature, r.notes);
      read_into(*run, &store::RunDir::ops, store::kOps.file, r.ops, r.notes);
      read_into(*run, &store::RunDir::symmetry, store::kSymmetry.file, r.symmetry, r.notes);
    }
    const std::string who = run_label(e);
    for (const auto& n : r.notes) s.warnings.push_back(fmt::format("run {} ({}): {}", who, e.run_id, n));
    if (r.newer_than_analysis)
      s.warnings.push_back(fmt::format("run {} ({}) changed after the analysis: rerun `saddlescope analyze`", who, e.run_id));
    if (e.skipped)
      s.warnings.push_back(
          fmt::format("run {} ({}) is {} and not in the statistics: {}", who, e.run_id, e.status, *e.skipped));
    s.runs.push_back(std::move(r));
  }
  for (const auto& d : store::list_run_dirs(dir))
    if (!listed.count(base_name(d)) && !store::is_temporary_name(base_name(d))) {  // a writer's temporary is no run
      s.unanalysed.push_back(d);
      s.warnings.push_back(fmt::format("run {} is not in the analysis: rerun `saddlescope analyze`", base_name(d)));
    }
  for (const auto& p : s.plan)
    if (p.state != "completed" && !planned_run_present(s, p))
      s.warnings.push_back(fmt::format("planned run {}: {}{}", p.label, p.state, p.note.empty() ? "" : " (" + p.note + ")"));
  return s;
}

ReportModel build_model(const StudyData& study) {
  const double level = std::isnan(study.analysis.definitions.level) ? 0.95 : study.analysis.definitions.level;
  const double alpha = std::round((1 - level) * 1e12) / 1e12;
  ReportModel m;
  m.study = study.name;
  m.study_dir = study.dir;
  m.generated = store::utc_now();
  m.alpha = alpha;
  m.warnings = study.warnings;
  m.n_runs = study.analysis.n_runs;
  m.n_skipped = study.analysis.n_skipped;
  m.verdict = verdict_model(study, alpha);
  m.setup = setup_model(study);
  m.loss = loss_model(study);
  m.saddles = saddles_model(study);
  m.rounding = rounding_model(study);
  m.divergence = divergence_model(study);
  m.symmetry = symmetry_model(study);
  m.noise_budget = noise_model(study);
  return m;
}

}  // namespace saddlescope::reports
