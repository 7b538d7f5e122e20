// tools/load/coordinator.h - one heartwheel-load run over agents on many hosts.
//
// The coordinator holds no connection to the target itself. It reaches its
// agents (`--agents HOST:PORT,...`: agents started with --agent-listen; or
// `--agents-listen HOST:PORT --expect-agents K`: agents started with
// --coordinator), gives agent a of A its share of the run (its own command
// line minus the coordinator's flags, with --connections N/A (the first N
// mod A agents one more) and --connect-rate R/A, so the whole run ramps at
// R), and starts them together once every agent said ready (a share an
// agent refuses stops the run before anything connects: a usage error).
// While they run it sums their timeline points into one live line; at the
// end it merges their results (counters add, histograms add bucket by
// bucket: merged percentiles are those of every sample) and applies
// --expect-idle-close (and --expect-delivery) to the merged result: one
// verdict. An agent whose connection drops, or that says nothing for
// --agent-timeout, before its result came is LOST: the report says which
// and when, `complete` is false and the exit status 1.
// --mode ws: agent 0 alone runs the publisher (one for the whole run); every
// agent's subscribers are held to its offsets when the results merge, and
// publication stamps are read on the coordinator's clock: before the run it
// reads each agent's CLOCK_MONOTONIC (the best of 5 round trips) and tells
// the agent its offset, within half that round trip.
// --json: the merged report (as a one-host run's) plus `agents` (per agent:
// address, share, status, lost, its key figures; ws: its clock offset) and
// `agents_lost`.
// Threads: one. Everything blocking is bounded (connect, ready, run).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "options.h"

namespace heartwheel::load {

struct CoordinatorOptions {
  std::vector<std::string> agents;  // HOST:PORT of agents that listen
  std::string listen;               // or: agents connect here
  unsigned expect_agents = 0;       // ... and this many of them
  std::chrono::nanoseconds agent_wait = std::chrono::seconds(60);
  std::chrono::nanoseconds agent_timeout = std::chrono::seconds(10);

  bool active() const noexcept { return !agents.empty() || !listen.empty(); }
};

// Registers --agents, --agents-listen, --expect-agents, --agent-wait,
// --agent-timeout on the run's command line.
void add_coordinator_options(CLI::App& app, CoordinatorOptions& options);

// Cross-field checks (throws std::invalid_argument naming the flag), and the
// share of agent 0 checked as a one-host run (the file limit per process).
void validate_coordinator(const LoadOptions& load, const CoordinatorOptions& options);

// `argv` (the whole command line) as agent `index` of `count` gets it; in ws
// mode with that agent's clock offset (its clock minus the coordinator's).
std::vector<std::string> agent_share_argv(const std::vector<std::string>& argv,
                                          const LoadOptions& load, unsigned index, unsigned count,
                                          std::int64_t clock_offset_ns = 0);

// The run; returns the exit status (0, 1 failed or an agent lost, 2 an agent
// refused its share, 3 expectations not met).
int run_coordinator(const LoadOptions& load, const CoordinatorOptions& options,
                    const std::vector<std::string>& argv);

}  // namespace heartwheel::load
