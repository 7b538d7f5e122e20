#include <heartwheel/common/error.h>

#include <uv.h>

namespace heartwheel {

namespace {
class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "heartwheel"; }
  std::string message(int value) const override {
    if (value < 0) return uv_strerror(value);
    switch (static_cast<errc>(value)) {
      case errc::ok: return "success";
      case errc::closed: return "closed";
      case errc::limit_reached: return "limit reached";
      case errc::timed_out: return "timed out";
      case errc::invalid_argument: return "invalid argument";
      case errc::protocol_error: return "protocol error";
      case errc::frame_too_large: return "frame too large";
      case errc::shutting_down: return "shutting down";
      case errc::unavailable: return "no server available";
      case errc::too_large: return "larger than the configured limit";
    }
    return "unknown heartwheel error " + std::to_string(value);
  }
};
}  // namespace

const std::error_category& heartwheel_category() noexcept {
  static const Category category;
  return category;
}

void check_uv(int uv_code, const char* what) {
  if (uv_code < 0) throw std::system_error(uv_error(uv_code), what);
}

std::string error_name(const std::error_code& ec) {
  if (!ec) return "OK";
  if (&ec.category() == &heartwheel_category() && ec.value() < 0) return uv_err_name(ec.value());
  return ec.message();
}

}  // namespace heartwheel
