#include <heartwheel/http/session_options.h>

#include <stdexcept>
#include <string>

namespace heartwheel::http {

void SessionOptions::validate() const {
  auto non_negative = [](Duration d, const char* name) {
    if (d.count() < 0)
      throw std::invalid_argument(std::string("http::SessionOptions: ") + name +
                                  " must be >= 0 (0 turns it off)");
  };
  non_negative(header_timeout, "header_timeout");
  non_negative(body_timeout, "body_timeout");
  non_negative(request_timeout, "request_timeout");
  non_negative(keepalive_timeout, "keepalive_timeout");
  non_negative(send_timeout, "send_timeout");
  non_negative(pipeline_slice, "pipeline_slice");
  auto positive = [](std::size_t n, const char* name) {
    if (n == 0)
      throw std::invalid_argument(std::string("http::SessionOptions: ") + name + " must be > 0");
  };
  positive(max_header_bytes, "max_header_bytes");
  positive(max_body_bytes, "max_body_bytes");
  positive(max_pipelined, "max_pipelined");
  positive(max_buffered_bytes, "max_buffered_bytes");
  positive(pipeline_burst, "pipeline_burst");
}

}  // namespace heartwheel::http
