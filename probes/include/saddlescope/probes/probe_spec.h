// Probe specifications as users write them: NAME[:KEY=VALUE[,KEY=VALUE...]], e.g.
//   curvature:every=50,k=2        symmetry:every=10        curvature:at=0+500+1000,float64=true
// Torch-free, so that configs are validated before any training starts.
//
//   curvature  every (2500: a probe step then costs ≤ 7.4% of the training of the autoencoder and PredNet
//              as measured, docs/benchmarks.md), at (steps joined by '+'), k (1) extreme eigenpairs at each end,
//              tol (1e-3), iters (100) Lanczos cap, batch (256; a model may set its own default:
//              trainer/config.h probe_defaults) probe-batch size, float64 (false) measure on a
//              float64 copy of the model, trace (0) Hutchinson samples, slq (0) SLQ probes,
//              slq_steps (40), vectors (false) save eigenvectors as .npy, seed (0)
//   symmetry   every (100), at
//   noise      every (1000), at, sgd_batch (0: the run's batch size) B whose sampling noise is measured,
//              k (32, at least 2) per-example gradients it is estimated from, seed (0) for the draw of
//              the run's gradient perturbation; the rounding is the run's gradient against float64
//              on B probe examples (see probe.h, docs/run-store.md noise.csv)
//   ophash     every (1), at: a digest of every op of the step, inputs and outputs (op_hashes.h)
//   ops        every (1000), at, k (8) output elements (and weight elements) sampled per op and tap step,
//              only (all) op names joined by '+', wgrad (true) also tap weight gradients
//              and the loss's gradient (dgrad), seed (0);
//              see op_taps.h
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::probes {

struct ProbeSpec {
  std::string name;                           // curvature | symmetry | noise | ophash | ops
  std::string text;                           // the spec as written
  int64_t every = 0;                          // cadence in optimiser steps (0: only `at`)
  std::vector<int64_t> at;                    // further steps to probe at
  std::map<std::string, std::string> values;  // every option, defaults filled in, as text

  // Typed access. REQUIRES: `key` is an option of this probe (parse_probe_spec checked the value).
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;

  // Due at optimiser step `step`?
  bool due(int64_t step) const;
  // The spec with every option written out, e.g. "curvature:batch=256,every=2500,k=1,..."
  std::string resolved() const;
};

// Parses and checks one spec: a known probe, known options, values of the right type and range
// (every >= 1 unless `at` is given; k >= 1; tol > 0; ...). Errors say what was expected, e.g.
// "probe 'curvature:every=0': every must be >= 1, got 0". `defaults` replace built-in defaults of
// options the text leaves out (a model's own probe batch, trainer/config.h); entries for options
// this probe does not take are ignored.
// REQUIRES: each default that applies is a valid value for its option.
Result<ProbeSpec> parse_probe_spec(const std::string& text, const std::map<std::string, std::string>& defaults = {});

// The names of the known probes, for help texts.
std::vector<std::string> probe_names();

// Every probe with its options and their defaults, for help texts: "curvature[:every=2500,...], ..., or
// ops[:every=1000,...]". Generated from the table parse_probe_spec checks against.
std::string probe_grammar();

}  // namespace saddlescope::probes
