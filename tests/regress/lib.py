# lib.py: helpers for the regress tests. Each test starts the built
# sandbox-mcp with a private state directory and configuration, talks to
# it over stdio or HTTP, and checks what comes back. A failed check prints
# what was expected and what came, and the test exits 1.
#
# Environment (set by tests/run.sh):
#   SANDBOX_MCP_BIN      the binary under test
#   SANDBOX_MCP_SRCDIR   the source tree
#   SANDBOX_MCP_IMAGE    a small local image (sandbox-mcp/busybox:test)

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("SANDBOX_MCP_BIN", "./sandbox-mcp")
SRCDIR = os.environ.get("SANDBOX_MCP_SRCDIR", ".")
IMAGE = os.environ.get("SANDBOX_MCP_IMAGE", "sandbox-mcp/busybox:test")
VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]

_cleanups = []
_checks = 0


def cleanup(fn):
    """Run fn when the test ends, whatever happens."""
    _cleanups.append(fn)


def _run_cleanups():
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - cleanup must go on
            print("cleanup failed: %r" % (e,), file=sys.stderr)


_servers = []


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    for srv in _servers:
        try:
            lines = srv.log().splitlines()
        except OSError:
            continue
        # Repeated messages once each, in order of their first time.
        seen = set()
        tail = []
        for line in lines:
            key = line.split(": ", 1)[-1]
            if key not in seen:
                seen.add(key)
                tail.append(line)
        tail = tail[-30:]
        if tail:
            print("--- server log (%s), last lines:" % srv.state,
                  file=sys.stderr)
            for line in tail:
                print("    " + line, file=sys.stderr)
    _run_cleanups()
    sys.exit(1)


def check(cond, msg):
    global _checks
    _checks += 1
    if not cond:
        fail(msg)


def check_eq(got, want, what):
    global _checks
    _checks += 1
    if got != want:
        fail("%s: expected %r, got %r" % (what, want, got))


def check_in(needle, hay, what):
    global _checks
    _checks += 1
    if needle not in hay:
        fail("%s: expected %r in %r" % (what, needle, hay))


def main(fn):
    """Run a test function with cleanups; print a summary line."""
    try:
        fn()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - report anything
        import traceback
        traceback.print_exc()
        fail("exception: %r" % (e,))
    _run_cleanups()
    if _checks == 0:
        print("FAIL: the test checked nothing", file=sys.stderr)
        sys.exit(1)
    print("ok (%d checks)" % _checks)
    sys.exit(0)


def mounts_under(d):
    """Mount points at or under a directory, deepest first."""
    top = os.path.realpath(d)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)),
                        line.split()[4])
            if mp == top or mp.startswith(top + "/"):
                found.append(mp)
    return sorted(found, key=len, reverse=True)


def remove_tmpdir(d):
    """Remove a test's directory: what a server mounted under it (the
    sandboxes' disks) is unmounted first, lazily, as a killed server
    leaves its mounts behind."""
    for mp in mounts_under(d):
        subprocess.run(["umount", "-l", mp], capture_output=True)
    # rm, not shutil.rmtree: a test's tree may be deeper than Python's
    # recursion allows.
    subprocess.run(["rm", "-rf", "--one-file-system", d],
                   capture_output=True)


def tmpdir(prefix="smcp-test-"):
    d = tempfile.mkdtemp(prefix=prefix)
    cleanup(lambda: remove_tmpdir(d))
    return d


def small_fs(top, size="400M", inodes=None):
    """A loop-mounted ext4 of size (no blocks reserved for root; inodes
    of them when given) at top/fs, unmounted at the end; its mount
    point."""
    img = os.path.join(top, "fs.img")
    fs = os.path.join(top, "fs")
    os.makedirs(fs)
    subprocess.run(["truncate", "-s", size, img], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0"] +
                   (["-N", str(inodes)] if inodes else []) + [img],
                   check=True)
    subprocess.run(["mount", "-o", "loop", img, fs], check=True)
    cleanup(lambda: subprocess.run(["umount", "-l", fs],
                                   capture_output=True))
    return fs


def rss_kib(pid):
    """VmRSS of a process, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def readers_of(path):
    """Whether a process holds path open."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == path:
                    return True
        except OSError:
            continue
    return False


def children_named(pid, comm):
    """The children of pid whose command name is comm."""
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for k in kids:
            try:
                with open("/proc/%d/comm" % k) as f:
                    if f.read().strip() == comm:
                        out.append(k)
            except OSError:
                pass
    return out


def forkers_of(pid):
    """The helper forkers (job.c) among the children of pid."""
    return children_named(pid, "smcp-forker")


def forker_sockets(pid):
    """The server's sockets to its helper forkers (job.c): one to each
    forker, and one to each forker's spare helper."""
    return sum(1 + len(children_named(f, "smcp-spare"))
               for f in forkers_of(pid))


def free_bytes(path):
    """What an unprivileged writer may still write on path's file
    system."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


SUITE_DISK = "1G"


class Server:
    """A sandbox-mcp process with a private state directory."""

    def __init__(self, sets=("management",), config="", listen=None,
                 stdio=True, args=(), docker_host=None, env=None,
                 state=None):
        self.dir = tmpdir()
        self.state = state or os.path.join(self.dir, "state")
        self.conf = os.path.join(self.dir, "sandbox-mcp.conf")
        with open(self.conf, "w") as f:
            # A sandbox's disk takes its whole cap from the host when it
            # is made: the suite's are 1G unless a test sets its own, so
            # that a run never needs tens of gigabytes. (Last, so that the
            # test's lines keep their numbers.)
            f.write(config)
            if not re.search(r"^\s*profile\b.*\bdisk\b", config, re.M):
                f.write("%sprofile disk %s\n" % (
                    "\n" if config and not config.endswith("\n") else "",
                    SUITE_DISK))
        argv = [BIN, "-f", self.conf, "--state-dir", self.state]
        for s in sets:
            argv += ["--set", s]
        if listen is not None:
            argv += ["--listen", listen]
        if not stdio:
            argv += ["--no-stdio"]
        if docker_host is not None:
            argv += ["--docker-host", docker_host]
        argv += list(args)
        self.stderr_path = os.path.join(self.dir, "stderr.log")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=env)
        self._buf = b""
        self._pending = {}
        self._next_id = 100
        self.port = None
        _servers.append(self)
        # After the kill (cleanups run last first): the tenants' networks
        # its state directory made, which a killed server leaves behind.
        state = self.state
        cleanup(lambda: remove_our_networks(state))
        cleanup(lambda: remove_our_helper_groups(state))
        cleanup(self.kill)
        if listen is not None:
            self.port = self._wait_port()

    def _wait_port(self, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            log = self.log()
            m = re.search(r"listening on http://\S+:(\d+)/mcp", log)
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                fail("server exited %r before listening: %s"
                     % (self.proc.returncode, log))
            time.sleep(0.02)
        fail("server did not start listening: " + self.log())

    def log(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()

    # stdio
    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv(self, timeout=10):
        """Read one message line from stdout."""
        end = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = end - time.time()
            if left <= 0:
                fail("no message within %s s; stderr: %s"
                     % (timeout, self.log()[-2000:]))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    fail("stdout closed; stderr: " + self.log()[-2000:])
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            fail("stdout carried a line that is not JSON: %r" % line[:200])

    def no_message(self, wait=0.3):
        """Check that nothing arrives on stdout for a while."""
        fd = self.proc.stdout.fileno()
        r, _, _ = select.select([fd], [], [], wait)
        if r:
            self._buf += os.read(fd, 65536)
        check(not self._buf, "unexpected output on stdout: %r"
              % self._buf[:500])

    def request(self, method, params=None, timeout=10):
        self._next_id += 1
        rid = self._next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait(rid, timeout)

    def wait(self, rid, timeout=10):
        end = time.time() + timeout
        while rid not in self._pending:
            m = self.recv(max(0.01, end - time.time()))
            self._pending[m.get("id")] = m
        return self._pending.pop(rid)

    def initialize(self, version="2025-06-18"):
        r = self.request("initialize", {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "regress", "version": "1"}})
        check("result" in r, "initialize failed: %r" % r)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r["result"]

    def call(self, name, args=None, timeout=30):
        params = {"name": name}
        if args is not None:
            params["arguments"] = args
        r = self.request("tools/call", params, timeout)
        check("result" in r, "tools/call answered with %r" % r)
        return r["result"]

    def close_stdin(self):
        self.proc.stdin.close()

    def wait_exit(self, timeout=10):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            fail("server did not exit within %s s" % timeout)


def ok_result(res, what):
    check(res.get("isError") is False, "%s: expected success, got %r"
          % (what, res))
    check(res.get("content") == [], "%s: content must be []" % what)
    return res["structuredContent"]


def err_result(res, kind, what):
    check(res.get("isError") is True, "%s: expected an error, got %r"
          % (what, res))
    err = res["structuredContent"]["error"]
    check_eq(err["kind"], kind, what + " error kind")
    check(isinstance(err.get("details"), dict), what + ": details object")
    check(isinstance(err.get("message"), str) and err["message"],
          what + ": message")
    return err


class Http:
    """A plain HTTP/1.1 client on one connection, for exact control."""

    def __init__(self, port, host="127.0.0.1", timeout=10):
        self.sock = socket.create_connection((host, port), timeout)
        self.sock.settimeout(timeout)
        self.buf = b""
        cleanup(self.close)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        self.sock.sendall(data)

    def request(self, method, path, body=None, headers=None,
                host="127.0.0.1"):
        h = {"Host": host}
        if body is not None:
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
            h["Accept"] = "application/json, text/event-stream"
            h["Content-Length"] = str(len(body))
        h.update(headers or {})
        lines = ["%s %s HTTP/1.1" % (method, path)]
        lines += ["%s: %s" % (k, v) for k, v in h.items() if v is not None]
        self.send_raw(("\r\n".join(lines) + "\r\n\r\n").encode() +
                      (body or b""))
        return self.response()

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def response(self):
        """Read one response: (status, headers dict lowercased, body)."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        if status == 100:
            return self.response()
        if headers.get("content-type") == "text/event-stream":
            # An answer that became an event stream: the body is its last
            # message, the events are in self.events.
            self.events = self.sse_events(headers)
            data = [e["data"] for e in self.events if e.get("data")]
            return status, headers, data[-1].encode() if data else b""
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def sse_body(self, headers, until=None):
        """The body of an event stream (chunked or up to EOF) as text;
        until(text) may stop the reading early."""
        raw = b""
        chunked = headers.get("transfer-encoding") == "chunked"
        while True:
            if chunked:
                while b"\r\n" not in self.buf:
                    self._fill()
                line, rest = self.buf.split(b"\r\n", 1)
                n = int(line, 16)
                while len(rest) < n + 2:
                    self._fill()
                    line, rest = self.buf.split(b"\r\n", 1)
                raw += rest[:n]
                self.buf = rest[n + 2:]
                if n == 0:
                    break
            else:
                try:
                    self._fill()
                except EOFError:
                    raw += self.buf
                    self.buf = b""
                    break
                raw, self.buf = raw + self.buf, b""
            if until is not None and until(raw.decode()):
                break
        return raw.decode()

    def sse_events(self, headers, until=None):
        return sse_parse(self.sse_body(headers, until))

    def closed(self, timeout=5):
        """Whether the server closes the connection within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except socket.timeout:
            return False
        except OSError:
            return True


def conn_from(source, port):
    """An Http connection to the server made from a given local address
    (127.0.0.2 and the like: a trusted proxy, another peer)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    c = Http.__new__(Http)
    c.sock, c.buf = s, b""
    cleanup(c.close)
    return c


def sse_parse(text):
    """Events of an SSE body: dicts with id/data, and comments under ":"."""
    events = []
    for block in text.split("\n\n"):
        if not block:
            continue
        e = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                e.setdefault(":", []).append(line[1:].strip())
                continue
            k, _, v = line.partition(":")
            v = v[1:] if v.startswith(" ") else v
            e[k] = e[k] + "\n" + v if k == "data" and k in e else v
        events.append(e)
    return events


def http_json(body):
    return json.loads(body.decode())


def http_session(port, version="2025-06-18", key=None):
    """Open an MCP session over HTTP; return (Http, session id)."""
    c = Http(port)
    hdr = {}
    if key is not None:
        hdr["Authorization"] = "Bearer " + key
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "regress", "version": "1"}}},
        hdr)
    check_eq(st, 200, "initialize status")
    sid = h.get("mcp-session-id")
    check(sid is not None and re.fullmatch(r"[0-9a-f]{32}", sid),
          "Mcp-Session-Id: %r" % sid)
    hdr["Mcp-Session-Id"] = sid
    hdr["MCP-Protocol-Version"] = version
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "method": "notifications/initialized"}, hdr)
    check_eq(st, 202, "initialized notification status")
    return c, hdr


class Peer:
    """One MCP session over HTTP with one API key: tool calls, and the
    REST routes with the same key."""

    def __init__(self, port, key, name):
        self.port = port
        self.key = key
        self.name = name
        self.conn, self.hdr = http_session(port, key=key)
        self.rid = 10

    def call(self, tool, args):
        self.rid += 1
        st, h, b = self.conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": self.rid, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}, self.hdr)
        check_eq(st, 200, "%s: %s status" % (self.name, tool))
        r = http_json(b)
        check("result" in r, "%s: %s answered %r" % (self.name, tool, r))
        return r["result"]

    def ok(self, tool, args):
        return ok_result(self.call(tool, args), "%s: %s" % (self.name,
                                                            tool))

    def route(self, method, path, body=None):
        """A REST route: (status, raw body)."""
        st, h, b = Http(self.port).request(
            method, path, body, {"Authorization": "Bearer " + self.key})
        return st, b

    def rest(self, method, path, body=None):
        """A REST route: (status, JSON body or None)."""
        st, b = self.route(method, path, body)
        return st, (http_json(b) if b else None)


def box_server(config="", **kw):
    """A server of the boxes set, initialized; its boxes' containers and
    networks removed at the end."""
    s = Server(sets=("boxes",), config=config, **kw)
    state = s.state
    # (Run last first: the containers, then their networks.)
    cleanup(lambda: remove_our_networks(state))
    cleanup(lambda: remove_our_containers(state))
    if kw.get("stdio", True):
        s.initialize()
    return s


def asan_bin():
    """The AddressSanitizer build (make check builds it)."""
    build = os.environ.get("SANDBOX_MCP_BUILDDIR", ".")
    path = os.path.join(build, "tests", "asan", "sandbox-mcp")
    if not os.access(path, os.X_OK):
        fail("no ASan build at %s (make check builds it)" % path)
    return path


def keygen(name, *sets):
    argv = [BIN, "keygen", name]
    for s in sets:
        argv += ["--set", s]
    out = subprocess.run(argv, check=True, capture_output=True,
                         text=True).stdout.splitlines()
    return out[0], out[1]


def docker(*args, check_rc=True):
    r = subprocess.run(["docker"] + list(args), capture_output=True,
                       text=True)
    if check_rc and r.returncode != 0:
        fail("docker %s: %s" % (" ".join(args), r.stderr))
    return r.stdout.strip()


class Dockerd:
    """A private Docker Engine: its own socket, data root and network
    namespace, so stopping it never disturbs the machine's own (in the
    machine's namespace a dockerd started with --bridge none deletes the
    docker0 interface the machine's dockerd uses)."""

    def __init__(self, images=()):
        self.root = tmpdir("smcp-dockerd-")
        self.sock = os.path.join(self.root, "docker.sock")
        self.host = "unix://" + self.sock
        self.proc = None
        cleanup(self.stop)
        self.start()
        for image in images:
            save = subprocess.Popen(["docker", "save", image],
                                    stdout=subprocess.PIPE)
            subprocess.run(["docker", "-H", self.host, "load"],
                           stdin=save.stdout, capture_output=True,
                           check=True)
            save.wait()

    def start(self):
        self.proc = subprocess.Popen(
            ["unshare", "--net", "--", "dockerd",
             "--data-root", os.path.join(self.root, "data"),
             "--exec-root", os.path.join(self.root, "exec"),
             "--pidfile", os.path.join(self.root, "docker.pid"),
             "-H", self.host, "--bridge", "none",
             "--iptables=false", "--ip6tables=false",
             "--storage-driver", "vfs"],
            stdout=open(os.path.join(self.root, "dockerd.log"), "ab"),
            stderr=subprocess.STDOUT)
        end = time.time() + 60
        while time.time() < end:
            r = subprocess.run(["docker", "-H", self.host, "info"],
                               capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.1)
        fail("private dockerd did not start")

    def stop(self):
        """Stop it the way an operator does (SIGTERM) and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)
        self.proc = None

    def docker(self, *args, check_rc=True):
        r = subprocess.run(["docker", "-H", self.host] + list(args),
                           capture_output=True, text=True)
        if check_rc and r.returncode != 0:
            fail("docker %s: %s" % (" ".join(args), r.stderr))
        return r.stdout.strip()


def root_hash(top):
    """The root hash of a tree as the specification defines it."""
    import hashlib
    entries = []
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, top)
            entries.append((rel.encode(), full))
    h = hashlib.sha256()
    for rel, full in sorted(entries):
        st = os.lstat(full)
        import stat as st_mod
        if st_mod.S_ISLNK(st.st_mode):
            h.update(b"l\0" + rel + b"\0" + os.readlink(full).encode() +
                     b"\0")
        elif st_mod.S_ISDIR(st.st_mode):
            h.update(b"d\0" + rel + b"\0")
        else:
            with open(full, "rb") as f:
                data = f.read()
            h.update(b"f\0" + rel + b"\0" + str(len(data)).encode() +
                     b"\0" + hashlib.sha256(data).hexdigest().encode() +
                     b"\0")
    return "sha256:" + h.hexdigest()


def our_containers(state):
    """Names of the containers labelled with this state directory."""
    out = docker("ps", "-a", "--filter",
                 "label=io.sandbox-mcp.state-dir=" + state,
                 "--format", "{{.Names}} {{.State}}")
    return dict(line.split() for line in out.splitlines() if line)


def remove_our_containers(state):
    """The containers of a state directory, and its tenants' networks
    (a killed server leaves both behind; the bridges' firewall rules
    name interfaces that are gone with them)."""
    names = list(our_containers(state))
    if names:
        docker("rm", "-f", *names, check_rc=False)
    remove_our_networks(state)


def remove_our_networks(state):
    """The tenants' networks of a state directory that nothing is on."""
    nets = docker("network", "ls", "-q", "--filter",
                  "label=io.sandbox-mcp.state-dir=" + state,
                  check_rc=False).split()
    if nets:
        docker("network", "rm", *nets, check_rc=False)


def helper_hierarchies():
    """Where the helper groups of a sandbox go (cgroup.c): the v1
    hierarchies of cpu, memory and pids, and the unified one for any of
    them that has none."""
    v1, v2 = {}, None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, post = line.split(" - ", 1)
            mp = pre.split()[4]
            kind, _, opts = post.split()[:3]
            if kind == "cgroup2":
                v2 = mp
            elif kind == "cgroup":
                for c in ("cpu", "memory", "pids"):
                    if c in opts.split(",") and c not in v1:
                        v1[c] = mp
    out = list(v1.values())
    if len(v1) < 3 and v2 is not None:
        out.append(v2)
    return out


def helper_groups(sid):
    """The helper group directories of sandbox sid that exist."""
    return [d for d in (os.path.join(h, "sandbox-mcp", sid)
                        for h in helper_hierarchies()) if os.path.isdir(d)]


def remove_our_helper_groups(state):
    """The helper groups a state directory's marks name, which a killed
    server leaves behind (their last processes may take a moment to go
    with it)."""
    marks = os.path.join(state, "helper-groups")
    try:
        ids = os.listdir(marks)
    except OSError:
        return
    end = time.time() + 5
    for sid in ids:
        for d in helper_groups(sid):
            while True:
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.time() > end:
                        break
                    time.sleep(0.05)


def workspace_root():
    """A workspace root (a test directory) holding one workspace, ws,
    with a.txt in it: (root, ws)."""
    root = tmpdir()
    ws = os.path.join(root, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    return root, ws


def wait_for(what, fn, timeout=10):
    """Poll fn until it is true (its value), or fail after timeout."""
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.02)
    fail("timed out waiting for " + what)
