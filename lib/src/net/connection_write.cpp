// The write path of a Connection: write() tries the socket at once
// (uv_try_write) and queues what the kernel did not take in a WriteQueue that
// exists only while bytes are pending; the queue goes out as one uv_write of
// all its segments. Copied bytes and shared buffers (write(SharedBytes):
// queued by reference, never copied) share the queue, in order. Also the
// watermarks (on_writable) and the write-stall / minimum-rate checks; a
// shared buffer written inside a SendBatchScope waits for the thread's batch
// (send_batch.h) and is finished here. The rest of a connection's life is in
// connection.cpp.
#include <heartwheel/common/error.h>
#include <heartwheel/common/send_batch_scope.h>
#include <heartwheel/net/connection.h>
#include <heartwheel/net/detail/connection_host.h>

#include <cerrno>
#include <memory>
#include <new>

#include "connection_extras.h"
#include "connection_guarded.h"
#include "send_batch.h"
#include "write_queue.h"

namespace heartwheel::net {

std::size_t Connection::queued_bytes() const noexcept {
  if (!wq_) return 0;
  return wq_->pending.bytes() + (wq_->writing ? tcp_.write_queue_size : 0);
}

void Connection::note_written(std::size_t bytes) noexcept {
  count_written(bytes);
  stats().bytes_written += bytes;
  note_write();
}

void detail::ConnectionHost::count_written(Connection& conn, std::size_t bytes) noexcept {
  if (bytes != 0 && !conn.closing()) conn.note_written(bytes);
}

std::uint64_t Connection::bytes_written() const noexcept {
  if (!wq_ || !wq_->writing) return written_total();
  return written_total() + (wq_->inflight.bytes() - tcp_.write_queue_size);
}

std::error_code Connection::write(std::string_view bytes) { return write_parts(&bytes, 1); }

std::error_code Connection::write(std::initializer_list<std::string_view> parts) {
  return write_parts(parts.begin(), parts.size());
}

std::error_code Connection::write(SharedBytes bytes) {
  if (!bytes) return make_error_code(errc::invalid_argument);
  const std::string_view view(*bytes);
  return write_parts(&view, 1, &bytes);
}

std::error_code Connection::write(std::string_view head, SharedBytes rest) {
  if (!rest) return make_error_code(errc::invalid_argument);
  const std::string_view parts[] = {head, std::string_view(*rest)};
  return write_parts(parts, 2, &rest);
}

std::error_code Connection::write_parts(const std::string_view* parts, std::size_t count,
                                        const SharedBytes* shared) {
  // A transport transforms the bytes (no shared buffer survives that).
  if (transport_ && !closing()) return extra_->transport->write(*this, parts, count);
  return write_socket(parts, count, shared);
}

std::error_code Connection::write_socket(const std::string_view* parts, std::size_t count,
                                         const SharedBytes* shared) {
  // A send of this connection waits in the thread's batch: it goes first.
  if (batched_) SendBatch::flush_thread();
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += parts[i].size();
  if (closing()) {
    count_dropped(total);
    return make_error_code(errc::closed);
  }
  if (total == 0) return {};
  const WritePolicy& wp = write_policy();
  if (wp.max_queued_bytes != 0 && queued_bytes() + total > wp.max_queued_bytes &&
      (wq_ || total > wp.max_queued_bytes)) {
    count_dropped(total);
    return make_error_code(errc::limit_reached);
  }
  std::size_t done = 0;
  if (!wq_) {
    // One buffer going to many connections (a SendBatchScope is open): held
    // for the thread's batch, sent with the others (send_batch.h).
    if (shared != nullptr && count == 1 && SendBatchScope::open() && host_ &&
        host_->connection_options().batch_shared_writes) {
      if (SendBatch* batch = SendBatch::of_thread()) {
        batched_ = true;
        batch->add(*this, *shared);
        return {};
      }
    }
    // Fast path: nothing queued, so the kernel may take it all right now
    // (one writev for several parts; parts past the 16th are queued).
    constexpr std::size_t kMaxBufs = 16;
    uv_buf_t bufs[kMaxBufs];
    unsigned nbufs = 0;
    for (std::size_t i = 0; i < count && nbufs < kMaxBufs; ++i) {
      if (parts[i].empty()) continue;
      bufs[nbufs++] =
          uv_buf_init(const_cast<char*>(parts[i].data()), static_cast<unsigned>(parts[i].size()));
    }
    const int rc = uv_try_write(reinterpret_cast<uv_stream_t*>(&tcp_), bufs, nbufs);
    if (rc > 0) {
      done = static_cast<std::size_t>(rc);
      note_written(done);
      if (done == total) return {};
    } else if (rc != UV_EAGAIN) {
      const auto ec = uv_error(rc);
      count_dropped(total);
      close(eof_ ? CloseReason::peer_closed : CloseReason::error, ec);
      return ec;
    }
  }
  queue_rest(parts, count, shared, done);
  check_high_watermark();
  return {};
}

void Connection::queue_rest(const std::string_view* parts, std::size_t count,
                            const SharedBytes* shared, std::size_t done) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += parts[i].size();
  if (!wq_) {
    wq_ = std::make_unique<WriteQueue>();
    const TimePoint now = timers().now();
    wq_->last_progress = wq_->window_start = now;
    wq_->progress_mark = wq_->window_mark = written_total();
    schedule_write_check();
  }
  stats().write_queue_bytes += total - done;  // leaves in on_write_done or ~Connection
  for (std::size_t i = 0; i < count; ++i) {   // the rest, after the `done` bytes the kernel took
    const std::string_view part = parts[i];
    if (done >= part.size()) {
      done -= part.size();
      continue;
    }
    if (shared != nullptr && i + 1 == count)
      wq_->pending.append_shared(*shared, done);  // a reference: the buffer is not copied
    else
      wq_->pending.append_copy(part.substr(done));
    done = 0;
  }
  if (!wq_->writing) start_write();
}

void Connection::check_high_watermark() noexcept {
  const WritePolicy& wp = write_policy();
  if (writable_ && !closing_ && queued_bytes() > wp.high_watermark) {
    writable_ = false;
    ++stats().unwritable_events;
    if (wp.slow_reader == SlowReaderPolicy::pause_reading) {
      policy_paused_ = true;
      ++stats().read_pauses;
      update_reading();
    }
    guarded([&] { handler_->on_writable(*this, false); });
  }
}

void Connection::finish_batched(const SharedBytes& bytes, int result) noexcept {
  batched_ = false;
  const std::size_t total = bytes->size();
  if (closing()) {  // cannot happen (closing sends the batch first); counted as write() would
    count_dropped(total);
    return;
  }
  std::size_t done = 0;
  if (result > 0) {
    done = static_cast<std::size_t>(result);
    note_written(done);
    if (done == total) return;
  } else if (result != -EAGAIN) {
    count_dropped(total);
    close(eof_ ? CloseReason::peer_closed : CloseReason::error, uv_error(result));
    return;
  }
  // Short, or no room: the rest waits in the queue by reference, as write()
  // does with what the kernel did not take at once.
  const std::string_view view(*bytes);
  try {
    queue_rest(&view, 1, &bytes, done);
  } catch (const std::bad_alloc&) {
    count_dropped(total - done);
    close(CloseReason::error, uv_error(UV_ENOMEM));
  }
}

void Connection::after_batched() noexcept {
  if (!closing()) check_high_watermark();
}

void Connection::start_write() noexcept {
  WriteQueue& q = *wq_;
  q.inflight.swap(q.pending);
  q.pending.clear();
  // One uv_write of every segment (libuv copies the uv_buf_t array; the
  // segments keep the bytes alive until on_write_done).
  constexpr std::size_t kStackBufs = 16;
  uv_buf_t stack_bufs[kStackBufs];
  std::unique_ptr<uv_buf_t[]> heap_bufs;
  const auto& segments = q.inflight.segments();
  uv_buf_t* bufs = stack_bufs;
  if (segments.size() > kStackBufs) {
    heap_bufs.reset(new (std::nothrow) uv_buf_t[segments.size()]);
    if (!heap_bufs) {
      close(CloseReason::error, uv_error(UV_ENOMEM));
      return;
    }
    bufs = heap_bufs.get();
  }
  unsigned nbufs = 0;
  for (const detail::WriteSegment& segment : segments) {
    const std::string_view b = segment.bytes();
    bufs[nbufs++] = uv_buf_init(const_cast<char*>(b.data()), static_cast<unsigned>(b.size()));
  }
  q.req.data = this;
  const int rc =
      uv_write(&q.req, reinterpret_cast<uv_stream_t*>(&tcp_), bufs, nbufs, &on_write_done);
  if (rc < 0) {
    close(CloseReason::error, uv_error(rc));
    return;
  }
  q.writing = true;
}

void Connection::on_write_done(uv_write_t* req, int status) {
  auto* c = static_cast<Connection*>(req->data);
  WriteQueue& q = *c->wq_;
  if (status < 0) {
    // ECANCELED: we are closing and counted the bytes as dropped already.
    if (status != UV_ECANCELED)
      c->close(c->eof_ ? CloseReason::peer_closed : CloseReason::error, uv_error(status));
    q.writing = false;
    return;
  }
  q.writing = false;
  c->count_written(q.inflight.bytes());
  c->stats().bytes_written += q.inflight.bytes();
  c->stats().write_queue_bytes -= q.inflight.bytes();
  q.inflight.clear();  // releases the shared buffers it referenced
  if (c->closing_ || !c->host_) return;
  c->note_write();
  q.last_progress = c->timers().now();
  if (!q.pending.empty()) {
    c->start_write();
  } else {
    c->wq_.reset();
    c->DeadlineTimer::clear_deadline(Deadline::write_stall);
  }
  c->after_progress();
}

void Connection::after_progress() noexcept {
  const WritePolicy& wp = write_policy();
  if (!writable_ && queued_bytes() <= wp.low_watermark) {
    writable_ = true;
    if (policy_paused_) {
      policy_paused_ = false;
      update_reading();
    }
    if (queued_bytes() == 0) drain_watch_ = false;  // this call tells it too
    guarded([&] { handler_->on_writable(*this, true); });
  }
  if (drain_watch_ && writable_ && !closing() && queued_bytes() == 0) {
    drain_watch_ = false;
    guarded([&] { handler_->on_writable(*this, true); });
  }
  if (flush_then_close_ && !closing_ && queued_bytes() == 0) finish_close(close_reason(), {}, false);
}

void Connection::schedule_write_check() noexcept {
  if (!wq_) return;
  const WritePolicy& wp = write_policy();
  TimePoint at = deadline_after(wq_->last_progress, wp.stall_timeout);
  if (wp.min_write_rate > 0) at = std::min(at, deadline_after(wq_->window_start, wp.rate_window));
  DeadlineTimer::set_deadline(Deadline::write_stall, at);
}

void Connection::check_write_progress(TimePoint now) {
  if (!wq_ || closing_) return;
  WriteQueue& q = *wq_;
  const WritePolicy& wp = write_policy();
  const std::uint64_t progress = bytes_written();
  if (progress > q.progress_mark) {
    // The kernel took part of a large write since the last look: that is
    // write activity even though the write has not completed.
    q.progress_mark = progress;
    q.last_progress = now;
    note_write();
  }
  if (wp.stall_timeout.count() > 0 && now - q.last_progress >= wp.stall_timeout) {
    close(CloseReason::write_stall, make_error_code(errc::timed_out));
    return;
  }
  if (wp.min_write_rate > 0 && now - q.window_start >= wp.rate_window) {
    const double seconds = std::chrono::duration<double>(now - q.window_start).count();
    const double rate = static_cast<double>(progress - q.window_mark) / seconds;
    if (rate < static_cast<double>(wp.min_write_rate)) {
      close(CloseReason::write_stall, make_error_code(errc::timed_out));
      return;
    }
    q.window_start = now;
    q.window_mark = progress;
  }
  schedule_write_check();
}

}  // namespace heartwheel::net
