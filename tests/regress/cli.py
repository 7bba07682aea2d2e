#!/usr/bin/env python3
# The command line: sets, usage errors (exit 2, nothing on stdout), -n
# with file:line: messages, --version, --help, keygen.

import os
import re
import subprocess

from lib import BIN, check, check_eq, check_in, main, tmpdir


def run(*args, stdin=b""):
    return subprocess.run([BIN] + list(args), input=stdin,
                          capture_output=True, timeout=20)


def test():
    d = tmpdir()
    for args, what in [((), "no set"),
                       (("--set", "all"), "--set all"),
                       (("--set", "everything"), "unknown set"),
                       (("--set", "management", "extra"), "operand"),
                       (("--bogus",), "unknown option"),
                       (("--set", "management", "--no-stdio"),
                        "--no-stdio without --listen"),
                       (("--set", "management", "--tenant", "a/b"),
                        "--tenant with a bad name"),
                       (("--set", "management", "--no-stdio", "--listen",
                         "127.0.0.1:0", "--tenant", "acme"),
                        "--tenant with --no-stdio")]:
        r = run(*args)
        check_eq(r.returncode, 2, what + ": exit status")
        check_eq(r.stdout, b"", what + ": nothing on stdout")
        check_in(b"usage: sandbox-mcp", r.stderr, what + ": usage")
    r = run("--set", "all")
    check_in(b'"all" is refused', r.stderr, "why all is refused")

    r = run("--version")
    check(re.fullmatch(rb"sandbox-mcp \d+\.\d+\.\d+\n", r.stdout),
          "--version: %r" % r.stdout)
    r = run("--help")
    check_eq(r.returncode, 0, "--help status")
    check_in(b"--set", r.stdout, "--help text")

    good = os.path.join(d, "good.conf")
    with open(good, "w") as f:
        f.write("workspace-root /srv\nlimit max-body 1M\n")
    r = run("-n", "-f", good)
    check_eq((r.returncode, r.stdout), (0, b""), "-n on a good file")
    check_in(b"configuration OK", r.stderr, "-n message")
    bad = os.path.join(d, "bad.conf")
    with open(bad, "w") as f:
        f.write("# header\nworkspace-root relative\nlisten\nlimit x 1\n")
    r = run("-n", "-f", bad)
    check_eq(r.returncode, 1, "-n on a bad file")
    err = r.stderr.decode()
    check_in("%s:2: workspace-root must be an absolute path" % bad, err,
             "line 2")
    check_in("%s:3: listen takes 1 argument, not 0" % bad, err, "line 3")
    check_in('%s:4: unknown limit "x"' % bad, err, "line 4")
    r = run("--set", "management", "-f", bad)
    check_eq(r.returncode, 2, "start with a bad file")
    check_in(b"3 errors in the configuration", r.stderr, "error count")
    r = run("--set", "management", "-f", os.path.join(d, "missing.conf"))
    check_eq(r.returncode, 2, "a named file that is missing")
    check_in(b"No such file", r.stderr, "missing file message")
    r = run("-n", "-f", d)
    check_eq(r.returncode, 1, "a directory as the file")

    # Command line overrides the file.
    with open(good, "a") as f:
        f.write("state-dir /nonexistent/never\n")
    r = run("--set", "management", "-f", good, "--state-dir",
            os.path.join(d, "state"), stdin=b"")
    check_eq(r.returncode, 0, "--state-dir overrides the file")
    check(os.path.isdir(os.path.join(d, "state")), "state dir created")
    r = run("--set", "management", "-f", good, "--docker-host",
            "tcp://10.0.0.1:2375")
    check_eq(r.returncode, 2, "a tcp docker-host")
    check_in(b"unix://", r.stderr, "docker-host message")

    # keygen.
    r = run("keygen", "ops", "--set", "runtime", "--set", "observability")
    check_eq(r.returncode, 0, "keygen status")
    lines = r.stdout.decode().splitlines()
    check_eq(len(lines), 2, "keygen prints two lines")
    check(re.fullmatch(r"smcp_[A-Za-z0-9_-]{43}", lines[0]), "key")
    check(re.fullmatch(r"api-key ops sha256:[0-9a-f]{64} sets "
                       r"runtime,observability", lines[1]), "line")
    r2 = run("keygen", "ops", "--set", "runtime")
    check(r2.stdout.split(b"\n")[0] != lines[0].encode(), "keys differ")
    for args in [("keygen",), ("keygen", "ops"), ("keygen", "bad name",
                                                   "--set", "runtime"),
                 ("keygen", "ops", "--set", "all")]:
        r = run(*args)
        check_eq(r.returncode, 2, "keygen %r" % (args,))
        check_eq(r.stdout, b"", "keygen %r: no key printed" % (args,))


main(test)
