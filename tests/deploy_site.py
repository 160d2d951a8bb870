"""The shipped nginx site as tests/test_deploy.py and bench/bench_launch.py run it: the file
``deploy/nginx/elitr-dashboard.conf`` of a tree with only its ports, upstream lines and a
self-signed certificate put in, and the wait for an address to answer its health check.
Not a test module: helpers, as ``tests/streamlit_ws.py``."""

from __future__ import annotations

import re
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path


def wait_health(base: str, logs: Path, tls: ssl.SSLContext | None = None) -> None:
    """Until ``base``'s ``/_stcore/health`` answers (3 minutes at most, then RuntimeError
    with the end of the ``*.log`` files in ``logs``)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2, context=tls):
                return
        except OSError:
            time.sleep(0.5)
    text = "\n".join(p.read_text() for p in logs.glob("*.log"))
    raise RuntimeError(f"{base} did not start: {text[-3000:]}")


def certificate(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (the site's example, by openssl)."""
    cert, key = tmp / "site.pem", tmp / "site.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def site_text(site_file: Path, *, tls_port: int, plain_port: int, first: int, cert: Path,
              key: Path) -> str:
    """The site with these ports and certificate, its two upstream lines at ``first`` and
    ``first + 1``; every answer names its replica (``X-Upstream``)."""
    text = site_file.read_text()
    text = text.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{tls_port} ssl http2;")
    text = text.replace("listen 80;", f"listen 127.0.0.1:{plain_port};")
    text = re.sub(r"\n *listen \[::\]:\d+[^;]*;", "", text)  # the machine may lack IPv6
    text = text.replace("/etc/letsencrypt/live/YOUR-HOST/fullchain.pem", str(cert))
    text = text.replace("/etc/letsencrypt/live/YOUR-HOST/privkey.pem", str(key))
    text = re.sub(r"server 127\.0\.0\.1:8501 ", f"server 127.0.0.1:{first} ", text)
    text = re.sub(r"server 127\.0\.0\.1:8502 ", f"server 127.0.0.1:{first + 1} ", text)
    return text.replace("    limit_req_status 429;",
                        "    add_header X-Upstream $upstream_addr always;\n"
                        "    limit_req_status 429;", 1)


def nginx_conf(tmp: Path, head: str = "master_process off;", events: str = "") -> str:
    """The main configuration around ``tmp/site.conf`` (temporary paths and logs in ``tmp``):
    ``head`` and ``events`` as nginx.conf's top and events block."""
    paths = " ".join(f"{name}_temp_path {tmp / name};"
                     for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"daemon off; {head} pid {tmp}/nginx.pid; error_log {tmp}/error.log;\n"
            f"events {{{events}}}\nhttp {{ access_log off; {paths} include {tmp}/site.conf; }}\n")
