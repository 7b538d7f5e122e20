// The Redis link's AUTH (heartwheel/redis/auth.h): the command's bytes, what
// counts as a refusal, the text reported (never the password), and the
// options' validation.
#include <heartwheel/redis/auth.h>
#include <heartwheel/redis/client.h>
#include <heartwheel/redis/error.h>
#include <heartwheel/redis/stats.h>

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

using namespace heartwheel;
using redis::Reply;

TEST_CASE("AUTH is AUTH password without a user and AUTH user password with one", "[redis][auth]") {
  CHECK(redis::auth_command("", "s3cret").bytes() == "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n");
  CHECK(redis::auth_command("push", "s3cret").bytes() ==
        "*3\r\n$4\r\nAUTH\r\n$4\r\npush\r\n$6\r\ns3cret\r\n");
  // Binary-safe: a password with spaces and CRLF is one argument.
  CHECK(redis::auth_command("", "a b\r\nc").bytes() == "*2\r\n$4\r\nAUTH\r\n$6\r\na b\r\nc\r\n");
  CHECK_THROWS_AS(redis::auth_command("user", ""), std::invalid_argument);
}

TEST_CASE("Only a NOAUTH error reply reads as the server wanting a password", "[redis][auth]") {
  CHECK(redis::is_noauth(Reply::error("NOAUTH Authentication required.")));
  CHECK_FALSE(redis::is_noauth(Reply::error("WRONGPASS invalid username-password pair")));
  CHECK_FALSE(redis::is_noauth(Reply::error("ERR unknown command 'NOAUTH'")));
  CHECK_FALSE(redis::is_noauth(Reply::string("NOAUTH")));  // a value, not an error
  CHECK_FALSE(redis::is_noauth(Reply::status("OK")));
}

TEST_CASE("A refused AUTH is reported with the address, the user and Redis's reason",
          "[redis][auth]") {
  CHECK(redis::auth_failure_detail("127.0.0.1:6379", "push", "WRONGPASS invalid pair") ==
        "AUTH refused by 127.0.0.1:6379 for user push: WRONGPASS invalid pair");
  CHECK(redis::auth_failure_detail("10.0.0.2:7000", "", "NOAUTH Authentication required.") ==
        "AUTH refused by 10.0.0.2:7000 for the default user: NOAUTH Authentication required.");
  const std::error_code ec = redis::errc::auth_failed;
  CHECK(ec.category().name() == std::string("redis"));
  CHECK(ec.message().find("AUTH") != std::string::npos);
}

TEST_CASE("Link options refuse a user without a password and a second AUTH in setup",
          "[redis][auth]") {
  redis::ClientOptions o;
  o.user = "push";
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("user needs a password"));
  o.password = "pw";
  CHECK_NOTHROW(o.validate());
  o.setup = {{"AUTH", "other"}};
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("AUTH in setup"));
  o.password.clear();
  o.user.clear();
  CHECK_NOTHROW(o.validate());  // an AUTH of its own in setup, as before
}

TEST_CASE("auth_failures is a counter of the stats table", "[redis][auth][stats]") {
  redis::LinkStats a, b;
  a.auth_failures = 2;
  b.auth_failures = 3;
  a.merge(b);
  CHECK(a.auth_failures == 5);
  CHECK(redis::to_json(a).find("\"auth_failures\":5") != std::string::npos);
}
