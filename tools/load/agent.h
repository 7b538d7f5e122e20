// tools/load/agent.h - heartwheel-load as one agent of a run across hosts.
//
// `heartwheel-load --agent-listen HOST:PORT` waits for a coordinator to
// connect; `heartwheel-load --coordinator HOST:PORT` connects to one
// (retrying while it starts). Either way the agent then says hello, gets
// its share of the run (the coordinator's command line with this agent's
// --connections and --connect-rate), checks it as the command line would
// (a bad share is refused with the message, before anything starts), waits
// for `start`, and runs it: a supervisor process of its own (fork, before
// any libuv loop exists) with its workers, exactly as a one-host run.
// Each timeline point goes to the coordinator as it comes (and an `alive`
// line every second in any case); at the end the whole result (the report
// with its raw counters and histogram buckets). A coordinator that goes
// away or says `abort` stops the run (SIGTERM to the supervisor, which
// stops its workers; they die with it in any case: PR_SET_PDEATHSIG).
//
// Agent-local flags (they win over what the coordinator sends):
// --source-ips, --source-ports (this host's addresses), --json FILE (this
// agent's own report), -q. One run per agent process.
// Exit status: the run's (0, 1, 3), 2 for a share the agent refused or a
// bad agent command line, 1 when the coordinator could not be reached or
// went away.
#pragma once

namespace heartwheel::load {

// True when argv asks for agent mode (--agent-listen or --coordinator).
bool is_agent_command(int argc, char** argv);

// The agent's whole life; returns the exit status.
int run_agent(int argc, char** argv);

}  // namespace heartwheel::load
