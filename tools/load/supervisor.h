// tools/load/supervisor.h - the parent process of a load run.
//
// Forks one Worker per --processes, each with a pipe back to the parent (the
// parent never creates a libuv loop, so forking is safe). It reads their JSON
// lines: progress once a second (summed into the live stderr line and the
// result's timeline) and the final raw LoadResult (merged into one).
// Workers report before they close their connections, so a worker killed
// while closing loses nothing. The report says how many workers reported
// (complete: false when one is missing).
// Bounded: at --duration + --grace every child still running gets SIGKILL;
// SIGINT/SIGTERM to the parent are forwarded to the children as SIGTERM (a
// second one kills them). Every child is reaped before run_supervisor()
// returns.
#pragma once

#include "options.h"

namespace heartwheel::load {

// Runs the whole load test. Returns the process exit status:
// 0 ok; 1 a worker failed or reported nothing, or no connection was
// established at all; 3 --expect-idle-close was set
// and a dead connection was not closed in [T, T + slack] or a live one was
// closed.
int run_supervisor(const LoadOptions& options);

}  // namespace heartwheel::load
