#!/usr/bin/python3
"""heartwheel-chat against the real Centrifugo JavaScript SDK (npm
`centrifuge` 5.x, pinned in tests/integration/sdk/package-lock.json and
installed there by tools/install-deps), from Node with `ws`: each test starts
what it needs (the chat server with a token secret and an API key, a
redis-server and a second node, the aiohttp backend of the proxies), then
runs one scenario of centrifugo_sdk_client.cjs, which speaks to it with the
SDK and asserts (docs/centrifugo.md).

Usage: centrifugo_sdk_test.py PATH/TO/heartwheel-chat [test ...]
  Exits 77 (skipped) only when `node` itself is not installed (the test
  command's tools/install-deps installs it); an SDK that is not installed in
  tests/integration/sdk fails every test, naming tools/install-deps."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "pylib"))
from chat_support import Server, run_tests  # noqa: E402
from procs import free_port  # noqa: E402
from redis_server import RedisServer  # noqa: E402

SERVER_BINARY = None  # set by run_tests
WATCHDOG_SECONDS = 60
SECRET = "centrifugo-sdk-test-secret-of-32-bytes!"
API_KEY = "sdk-test-api-key"
DIR = tempfile.mkdtemp(prefix="centrifugo-sdk-")
CLIENT = os.path.join(HERE, "centrifugo_sdk_client.cjs")
SDK = os.path.join(HERE, "sdk", "node_modules", "centrifuge", "package.json")


def write(name, text):
    path = os.path.join(DIR, name)
    with open(path, "w") as f:
        f.write(text)
    return path


SECRET_FILE = write("secret", SECRET + "\n")
API_KEY_FILE = write("api-key", API_KEY + "\n")
CHANNELS = write("channels.json", json.dumps({"namespaces": [
    {"name": "", "subscribe": "user", "publish": "subscriber", "history": True, "presence": True},
    {"name": "private", "subscribe": "token", "publish": "subscriber", "history": True,
     "presence": True}]}))


def chat(*flags):
    return Server(SERVER_BINARY, "--token-hmac-secret-file", SECRET_FILE,
                  "--api-key-file", API_KEY_FILE, "--channels-config", CHANNELS,
                  "--ping-interval", "1s", *flags)


def scenario(name, **cfg):
    """Runs centrifugo_sdk_client.cjs NAME; fails with its output if it does."""
    if not os.path.exists(SDK):
        raise AssertionError("the Centrifugo SDK is not installed: run tools/install-deps")
    cfg.setdefault("secret", SECRET)
    cfg.setdefault("api_key", API_KEY)
    env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
    r = subprocess.run(["node", CLIENT, name, json.dumps(cfg)], env=env, capture_output=True,
                       text=True, timeout=45)
    if r.returncode != 0 or ("ok " + name) not in r.stdout:
        raise AssertionError("%s: exit %d\n%s\n%s" % (name, r.returncode, r.stdout, r.stderr))


def test_connect_with_a_token_and_a_bad_one():
    with chat() as s:
        scenario("connect_tokens", port=s.port)


def test_api_and_client_publish_reach_two_clients_then_history_and_presence():
    with chat("--workers", "2") as s:
        scenario("publish_history_presence", port=s.port)


def test_reconnect_recovers_missed_publications():
    with chat() as s:
        scenario("recovery", port=s.port)


def test_expiring_token_refreshed_through_get_token_without_a_disconnect():
    with chat() as s:
        scenario("token_refresh", port=s.port)


def test_private_channel_takes_a_channel_token():
    with chat() as s:
        scenario("channel_token", port=s.port)


class Backend:
    """centrifugo_proxy_backend.py (aiohttp) on a free port; stopped by PID."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "centrifugo_proxy_backend.py")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise AssertionError("backend did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = "http://" + line.split()[-1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(timeout=10)


def test_connect_rpc_subscribe_publish_through_proxies_with_a_timeout():
    with Backend() as b:
        proxied = ["--proxy-connect-endpoint", b.url + "/connect",
                   "--proxy-rpc-endpoint", b.url + "/rpc",
                   "--proxy-subscribe-endpoint", b.url + "/subscribe",
                   "--proxy-publish-endpoint", b.url + "/publish",
                   "--proxy-timeout", "500ms", "--proxy-http-header", "Cookie"]
        # No token key: who connects is the backend's answer.
        down = "http://127.0.0.1:%d/connect" % free_port()  # nobody listens there
        with Server(SERVER_BINARY, "--api-key-file", API_KEY_FILE, *proxied) as s, \
                Server(SERVER_BINARY, "--proxy-connect-endpoint", down,
                       "--proxy-timeout", "500ms") as d:
            scenario("proxies", port=s.port, down_port=d.port)
            # The SDK kept reconnecting: each connect was refused (close 3004).
            d.read_stats(lambda st: st["chat"]["requests"].get("connect", 0) >= 2)


def test_two_nodes_on_redis_publish_disconnect_info_and_channels():
    with RedisServer() as r:
        redis = ["--redis", r.address(), "--pubsub-prefix", "sdk:"]
        with chat(*redis) as a, chat(*redis, "--workers", "2") as b:
            scenario("two_nodes", port=a.port, port2=b.port)


SKIPPED = 77  # ctest's SKIP_RETURN_CODE and meson's skip status

if __name__ == "__main__":
    if shutil.which("node") is None:
        print("SKIP: node is not installed (tools/install-deps installs it: Debian's node-ws "
              "depends on nodejs)")
        sys.exit(SKIPPED)
    run_tests(globals(), sys.argv)
