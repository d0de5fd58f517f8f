#include "saddlescope/study/study.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/toml_limits.h"

namespace saddlescope::study {
namespace {

using nlohmann::json;

// One table of config keys ([base], [models.X] or [configs.X]): key -> (value, "file:line").
struct Entries {
  std::string name;  // the table's name (models and configs); "" for base
  int line = 0;      // where it starts, for the file's order
  int64_t seed_offset = 0;  // added to each seed of the table's runs: the runs of two tables start
                            // from different weights (the 2021 study's independent runs)
  std::vector<std::pair<std::string, std::pair<json, std::string>>> keys;
};

// A TOML value as the JSON that ConfigBuilder::set_value takes (integers stay integers).
json to_json(const toml::node& n) {
  if (auto* i = n.as_integer()) return i->get();
  if (auto* d = n.as_floating_point()) return d->get();
  if (auto* s = n.as_string()) return s->get();
  if (auto* b = n.as_boolean()) return b->get();
  if (auto* a = n.as_array()) {
    json out = json::array();
    for (const auto& e : *a) out.push_back(to_json(e));
    return out;
  }
  return json();  // tables, dates: no config key takes them, and set_value says what it expected
}

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  std::string where(const toml::node& n) const { return fmt::format("{}:{}", path_, n.source().begin.line); }

  // The keys of one table, each checked to be settable by a study.
  Result<Entries> entries(const toml::table& t, const std::string& name, const std::string& section) const {
    Entries e{name, static_cast<int>(t.source().begin.line), {}};
    for (const auto& [key, node] : t) {
      std::string k(key.str());
      if (k == "seed" || k == "out")
        return Status::Error(where(node) + ": " + k + " is set by the study (" +
                             (k == "seed" ? "its seeds" : "study run --out") + "), not in " + section);
      if (k == "seed_offset") {
        if (name.empty()) return Status::Error(where(node) + ": seed_offset belongs in a [models.NAME] or [configs.NAME] table, not in " + section);
        auto v = node.value<int64_t>();
        if (!node.is_integer() || *v < 0 || *v > (int64_t{1} << 40))
          return Status::Error(where(node) + ": seed_offset must be an integer in 0..2^40");
        e.seed_offset = *v;
        continue;
      }
      e.keys.push_back({k, {to_json(node), where(node)}});
    }
    return e;
  }

  // [models.NAME] or [configs.NAME] tables, in the file's order.
  Result<std::vector<Entries>> named_tables(const toml::node& n, const std::string& section) const {
    const toml::table* t = n.as_table();
    if (!t) return Status::Error(where(n) + ": " + section + " must be a table of tables ([" + section + ".NAME])");
    std::vector<Entries> out;
    for (const auto& [key, node] : *t) {
      std::string name(key.str());
      const toml::table* sub = node.as_table();
      if (!sub) return Status::Error(where(node) + ": " + section + "." + name + " must be a table ([" + section + "." + name + "])");
      Status valid = store::validate_run_id(name);
      if (!valid.ok() || name.size() > 64)
        return Status::Error(where(node) + ": " + section + " name '" + name +
                             "' must be 1-64 characters of A-Z a-z 0-9 . _ - (it is part of each run's label)");
      auto e = entries(*sub, name, "[" + section + "." + name + "]");
      if (!e) return e.status();
      out.push_back(std::move(*e));
    }
    std::sort(out.begin(), out.end(), [](const Entries& a, const Entries& b) { return a.line < b.line; });
    if (out.empty()) return Status::Error(where(n) + ": [" + section + "] has no tables; give at least one [" + section + ".NAME]");
    return out;
  }

  // seeds = [1, 2, 3] or { from = 1, to = 8 }: the list, its size checked before it is built.
  Result<std::vector<int64_t>> seeds(const toml::node& n, int64_t other_axes) const {
    const std::string at = where(n) + ": seeds";
    std::vector<int64_t> out;
    if (const toml::array* a = n.as_array()) {
      for (const auto& e : *a) {
        if (!e.is_integer()) return Status::Error(at + " must list integers");
        out.push_back(e.as_integer()->get());
      }
    } else if (const toml::table* t = n.as_table()) {
      auto from = (*t)["from"].value<int64_t>(), to = (*t)["to"].value<int64_t>();
      if (!from || !to || t->size() != 2)
        return Status::Error(at + " must be a list of integers or { from = A, to = B } (integers, B >= A)");
      if (*to < *from) return Status::Error(fmt::format("{} from {} to {} is empty (to must be >= from)", at, *from, *to));
      if (static_cast<double>(*to) - *from + 1 > static_cast<double>(kMaxStudyRuns) / other_axes)
        return too_many(at, static_cast<double>(*to) - *from + 1, other_axes);
      for (int64_t s = *from; s <= *to; ++s) out.push_back(s);
    } else {
      return Status::Error(at + " must be a list of integers or { from = A, to = B }");
    }
    if (out.empty()) return Status::Error(at + " is empty: the study would have no runs");
    if (static_cast<double>(out.size()) * other_axes > kMaxStudyRuns) return too_many(at, out.size(), other_axes);
    std::set<int64_t> seen;
    for (int64_t s : out)
      if (!seen.insert(s).second) return Status::Error(fmt::format("{} lists {} twice", at, s));
    return out;
  }

 private:
  Status too_many(const std::string& at, double seeds, int64_t other_axes) const {
    return Status::Error(fmt::format("{}: {:.0f} seeds × {} models and configs is more than the {} runs a study may have",
                                     at, seeds, other_axes, kMaxStudyRuns));
  }

  std::string path_;
};

}  // namespace

std::string StudyRun::label() const { return fmt::format("{}/{}/s{}", model, config, seed); }

bool StudyRun::cuda() const { return cfg.execution.device.is_cuda(); }

int StudyRun::cuda_index() const { return cfg.execution.device.index; }

Result<Study> load_study(const std::string& path, const std::string& out) {
  auto text = store::read_file(path, trainer::kMaxConfigBytes, "the limit for a study file");
  if (!text) return text.status();
  SADDLESCOPE_RETURN_IF_ERROR(trainer::check_toml_nesting(*text, path));
  toml::table doc;
  try {
    doc = toml::parse(std::string_view(*text), std::string_view(path));
  } catch (const toml::parse_error& e) {
    // toml++ quotes what it saw, a newline included: shown escaped, the error stays one line.
    return Status::Error(
        fmt::format("{}:{}: {}", path, e.source().begin.line, printable(std::string(e.description()))));
  }
  Parser p(path);
  Study study;
  study.file = path;
  study.name = std::filesystem::path(path).stem().string();
  Entries base;
  std::vector<Entries> models, configs;
  const toml::node* seeds_node = nullptr;
  for (const auto& [key, node] : doc) {
    std::string k(key.str());
    if (k == "name") {
      if (!node.is_string() || !store::validate_run_id(node.as_string()->get()).ok())
        return Status::Error(p.where(node) + ": name must be a string of A-Z a-z 0-9 . _ -");
      study.name = node.as_string()->get();
    } else if (k == "description") {
      if (!node.is_string()) return Status::Error(p.where(node) + ": description must be a string");
    } else if (k == "seeds") {
      seeds_node = &node;
    } else if (k == "base") {
      if (!node.is_table()) return Status::Error(p.where(node) + ": base must be a table ([base])");
      auto e = p.entries(*node.as_table(), "", "[base]");
      if (!e) return e.status();
      base = std::move(*e);
    } else if (k == "models" || k == "configs") {
      auto t = p.named_tables(node, k);
      if (!t) return t.status();
      (k == "models" ? models : configs) = std::move(*t);
    } else {
      return Status::Error(p.where(node) + ": unknown key '" + k +
                           "' (a study has name, description, seeds, [base], [models.NAME] and [configs.NAME])");
    }
  }
  if (!seeds_node) return Status::Error(path + ": seeds is missing: give seeds = [1, 2, 3] or { from = 1, to = 3 }");
  // Without [models], the one model is base's (named after its model key); without [configs], one
  // config named "default".
  if (models.empty()) {
    std::string model = "autoencoder";
    for (const auto& [k, v] : base.keys)
      if (k == "model" && v.first.is_string()) model = v.first.get<std::string>();
    models.push_back({model, 0, {}});
  }
  if (configs.empty()) configs.push_back({"default", 0, {}});
  const std::string out_dir = out.empty() ? "runs/" + study.name : out;
  auto seeds = p.seeds(*seeds_node, static_cast<int64_t>(models.size() * configs.size()));
  if (!seeds) return seeds.status();

  std::set<std::string> warned;
  std::map<std::string, std::string> seen;  // run id -> label
  for (const auto& m : models)
    for (const auto& c : configs)
      for (int64_t listed : *seeds) {
        const int64_t seed = listed + m.seed_offset + c.seed_offset;
        trainer::ConfigBuilder builder;
        bool threads_set = false;
        for (const Entries* e : {static_cast<const Entries*>(&base), &m, &c})
          for (const auto& [k, v] : e->keys) {
            SADDLESCOPE_RETURN_IF_ERROR(builder.set_value(k, v.first, v.second));
            threads_set |= k == "threads";
          }
        SADDLESCOPE_RETURN_IF_ERROR(builder.set_value("seed", seed, p.where(*seeds_node) + " (seeds)"));
        SADDLESCOPE_RETURN_IF_ERROR(builder.set_value("out", out_dir, "--out"));
        std::vector<std::string> warnings;
        auto cfg = builder.resolve(&warnings);
        if (!cfg) return cfg.status();
        for (auto& w : warnings)
          if (warned.insert(w).second) study.warnings.push_back(w);
        StudyRun run{static_cast<int64_t>(study.runs.size()), m.name, c.name, seed, std::move(*cfg), "", threads_set};
        run.run_id = store::make_run_id(run.cfg.run_prefix(), run.cfg.identity());
        auto [it, fresh] = seen.emplace(run.run_id, run.label());
        if (!fresh)
          return Status::Error(path + ": " + it->second + " and " + run.label() + " are the same run (" + run.run_id +
                               "): their tables differ in nothing that changes the result");
        study.runs.push_back(std::move(run));
      }
  return study;
}

}  // namespace saddlescope::study
