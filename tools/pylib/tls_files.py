"""Throwaway TLS certificates for the tests and tools, made by the `openssl`
command line: a CA, a server certificate for IP 127.0.0.1 (what a client
connecting to 127.0.0.1 checks) and a client certificate (mutual TLS), ECDSA
P-256, valid for two days. Used by redis_server.py (Redis over TLS) and
tools/scale-run --tls. Standard library only.

    tls = TlsFiles(directory)    # ca.crt, server.crt/.key, client.crt/.key
"""
import os
import shutil
import ssl
import subprocess


class TlsFiles:
    """A CA, a server certificate (IP:127.0.0.1) and a client certificate,
    ECDSA P-256, made with the openssl CLI in `directory`."""

    def __init__(self, directory):
        if not shutil.which("openssl"):
            raise SystemExit("openssl missing: run tools/install-deps")
        self.dir = directory
        self.ca = self._path("ca.crt")
        self.server_cert, self.server_key = self._path("server.crt"), self._path("server.key")
        self.client_cert, self.client_key = self._path("client.crt"), self._path("client.key")
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-nodes", "-keyout", self._path("ca.key"), "-out", self.ca, "-days", "2",
                      "-subj", "/CN=heartwheel test CA")
        self._leaf("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1\n")
        self._leaf("client", "heartwheel", "extendedKeyUsage=clientAuth\n")

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _openssl(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    def _leaf(self, name, cn, extensions):
        ext = self._path(name + ".ext")
        with open(ext, "w") as f:
            f.write(extensions)
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", self._path(name + ".key"), "-out", self._path(name + ".csr"),
                      "-subj", "/CN=" + cn)
        self._openssl("x509", "-req", "-in", self._path(name + ".csr"), "-CA", self.ca,
                      "-CAkey", self._path("ca.key"), "-CAcreateserial", "-days", "2",
                      "-out", self._path(name + ".crt"), "-extfile", ext)

    def client_context(self):
        """An ssl.SSLContext that trusts the CA and presents the client certificate."""
        c = ssl.create_default_context(cafile=self.ca)
        c.load_cert_chain(self.client_cert, self.client_key)
        return c
