// See server_flags.h.
#include "server_flags.h"

#include <heartwheel/common/log.h>
#include <heartwheel/net/server.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cli_program.h"
#include "health.h"

namespace heartwheel::cli {

void add_server_flags(CLI::App& app, ServerFlags& f) {
  f.program = app.get_name();
  app.add_option("--max-connections", f.max_connections,
                 "per worker loop; beyond it new connections are accepted and reset (counted "
                 "as 'limit'), or make room with --drop-idle-at-limit; 0 = no limit")
      ->capture_default_str();
  app.add_option("--accept-batch", f.accept_batch,
                 "per worker loop: connections accepted per loop turn at most; the rest wait "
                 "in the kernel's listen queue for the next turn, so a flood of new connections "
                 "cannot hold the open ones' requests for long; 0 = all the kernel has queued")
      ->capture_default_str();
  app.add_option("--resume-batch", f.resume_batch,
                 "per worker loop: connections that stepped aside for the others (an HTTP "
                 "client's long pipeline) called back per loop turn at most; 0 = all waiting")
      ->capture_default_str();
  app.add_flag("--level-triggered-reads", f.level_triggered_reads,
               "read through libuv's uv_read_start (level-triggered), which serves the "
               "connections read last turn first again; by default (Linux) a turn reads "
               "connections in the order their data came (edge-triggered)");
  app.add_flag("--proxy-protocol", f.proxy_protocol,
               "every connection starts with a PROXY protocol header (v1 or v2, as HAProxy's "
               "send-proxy / send-proxy-v2 send); its client address replaces the socket's; "
               "connections without a valid one are closed (proxy_header_invalid)");
  app.add_option("--proxy-header-timeout", f.proxy_header_timeout,
                 "with --proxy-protocol: close a connection whose header is not complete by "
                 "then (proxy_header_timeout)")
      ->capture_default_str();
  app.add_option("--proxy-protocol-from", f.proxy_protocol_from,
                 "with --proxy-protocol: a network (10.0.0.0/8, 192.0.2.7, fd00::/8) whose "
                 "PROXY headers are believed, repeatable; a connection from anywhere else is "
                 "reset at once, header or not (proxy_untrusted); not given: every peer is "
                 "believed (a warning says so)")
      ->allow_extra_args(false);
  app.add_option("--max-connections-per-ip", f.max_connections_per_ip,
                 "open connections per client address, one count for all workers of the "
                 "process (per process with --processes); more are reset at once (ip_limit); "
                 "0 = no limit")
      ->capture_default_str();
  app.add_flag("--drop-idle-at-limit", f.drop_idle_at_limit,
               "at --max-connections, close the connection that read least recently "
               "(overload) to admit the new one, if it read nothing for --drop-idle-after");
  app.add_option("--drop-idle-after", f.drop_idle_after,
                 "how long a connection must have read nothing to be dropped at the limit")
      ->capture_default_str();
  app.add_option("--overload-start", f.overload_start,
                 "open connections (per worker loop) where idle timeouts start to shrink")
      ->capture_default_str();
  app.add_option("--overload-saturation", f.overload_saturation,
                 "open connections (per worker loop) where idle timeouts reach their floor")
      ->capture_default_str();
  app.add_option("--overload-memory-start", f.overload_memory_start,
                 "resident memory of the process where idle timeouts start to shrink "
                 "(512MiB, 2GB, ...; 0 = off)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--overload-memory-saturation", f.overload_memory_saturation,
                 "resident memory where idle timeouts reach their floor")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--overload-min-scale", f.overload_min_scale,
                 "the floor as a fraction of each idle timeout (0..1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--overload-min-timeout", f.overload_min_timeout,
                 "the floor as a duration (instead of --overload-min-scale)")
      ->capture_default_str();
  add_tls_flags(app, f.tls);
  app.add_option("--pid-file", f.pid_file,
                 "FILE: write the process id to FILE once listening (replaced whole); a restart "
                 "(kill -USR2 PID) has the successor rewrite it when it takes over");
}

void apply_server_flags(const ServerFlags& f, net::ServerOptions& so) {
  auto refuse = [](const std::string& what) { throw std::invalid_argument(what); };
  so.max_connections = f.max_connections;
  so.accept_batch = f.accept_batch;
  so.resume_batch = f.resume_batch;
  so.connection.edge_triggered_reads = !f.level_triggered_reads;
  so.proxy_protocol = f.proxy_protocol;
  so.proxy_header_timeout = parse_duration_flag("--proxy-header-timeout", f.proxy_header_timeout);
  if (f.proxy_protocol && so.proxy_header_timeout.count() <= 0)
    refuse("--proxy-header-timeout must be positive");
  if (!f.proxy_protocol_from.empty() && !f.proxy_protocol)
    refuse("--proxy-protocol-from needs --proxy-protocol");
  try {
    so.proxy_protocol_from = CidrSet::parse(f.proxy_protocol_from);
  } catch (const std::invalid_argument& e) {
    refuse(std::string("--proxy-protocol-from: ") + e.what());
  }
  so.max_connections_per_ip = f.max_connections_per_ip;
  if (auto tls = make_tls(f.tls)) so.transport = tls->transport;
  net::OverloadOptions& o = so.overload;
  o.drop_idle_at_limit = f.drop_idle_at_limit;
  o.drop_idle_after = parse_duration_flag("--drop-idle-after", f.drop_idle_after);
  if (f.drop_idle_at_limit && f.max_connections == 0)
    refuse("--drop-idle-at-limit needs --max-connections (the limit it acts at)");
  if (f.overload_start != 0 && f.overload_saturation == 0)
    refuse("--overload-start needs --overload-saturation");
  if (f.overload_saturation != 0 && f.overload_saturation <= f.overload_start)
    refuse("--overload-saturation must be above --overload-start");
  if (f.overload_memory_saturation != 0 && f.overload_memory_saturation <= f.overload_memory_start)
    refuse("--overload-memory-saturation must be above --overload-memory-start");
  if (f.overload_memory_start != 0 && f.overload_memory_saturation == 0)
    refuse("--overload-memory-start needs --overload-memory-saturation");
  o.start_connections = f.overload_start;
  o.saturation_connections = f.overload_saturation;
  o.memory_start_bytes = f.overload_memory_start;
  o.memory_saturation_bytes = f.overload_memory_saturation;
  o.min_scale = f.overload_min_scale;
  o.min_timeout = parse_duration_flag("--overload-min-timeout", f.overload_min_timeout);
  const bool thresholds = f.overload_saturation != 0 || f.overload_memory_saturation != 0;
  const bool floor = o.min_scale < 1.0 || o.min_timeout.count() > 0;
  if (o.min_scale < 1.0 && o.min_timeout.count() > 0)
    refuse("give --overload-min-scale or --overload-min-timeout, not both");
  if (thresholds && !floor)
    refuse("--overload-saturation needs a floor: --overload-min-scale or --overload-min-timeout");
  if (floor && !thresholds)
    refuse(
        "--overload-min-scale/--overload-min-timeout need --overload-saturation or "
        "--overload-memory-saturation");
  set_pid_file(f.pid_file);
  // Last, once nothing was refused: a line at start, in the log.
  if (f.proxy_protocol && f.proxy_protocol_from.empty())
    log::warning("--proxy-protocol without --proxy-protocol-from trusts every peer");
}

}  // namespace heartwheel::cli
