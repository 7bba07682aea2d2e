#!/usr/bin/env python3
# The floors of src/, kept by the build and checked here: every source
# file belongs to one floor (base and edges, engine, door, surfaces, and
# main, which wires them); a file includes only the headers its floor
# may see (an engine file never op.h or surface.h, the door never
# surface.h, a surface never engine.h); engine files name no symbol of
# the tool layer or the front ends (tool_, TOOL_ERR_, transport_, mcp_);
# and the link graph of the built objects (nm: which file's symbols each
# file uses) has no call up a floor and no cycle among engine files; the
# door starts no child process (job.c) and makes no Docker call
# (docker.c, docker-http.c) itself; only job.c reads a child's report.

import collections
import os
import re
import subprocess

from lib import check, check_eq, fail, main

SRC = os.path.join(os.environ.get("SANDBOX_MCP_SRCDIR", "."), "src")
BUILD = os.path.join(os.environ.get("SANDBOX_MCP_BUILDDIR", "."), "src")

FLOORS = {
    "base": """cause cfg log proc util xmalloc cgroup confine disk docker
        docker-events docker-http http job notice nsexec state sweep
        telemetry trash tree metrics store""",
    "engine": """audit basecache box command export files fold gitignore layer
        merge observe publish runtime sampler sandbox session squash tenantnet
        transcript workspace zygote""",
    "door": "op op-box op-files op-layer op-obs op-runtime op-sandbox",
    "surface": "auth forward jsonrpc mcp mcp-http mcp-tools rest"
        " transport-http transport-stdio",
    "main": "sandbox-mcp nsexec-main",
}
OBJECT = {"nsexec-main": "sandbox_mcp_nsexec-nsexec-main"}
RANK = {"base": 0, "engine": 1, "door": 2, "surface": 3, "main": 4}

# The headers of each floor, and which floors may include them.
FLOOR_HEADERS = {
    "sandbox-mcp.h": {"base", "engine", "door", "surface", "main"},
    "engine.h": {"engine", "door", "main"},
    "op.h": {"door", "surface", "main"},
    "surface.h": {"surface", "main"},
}
# A floor's private headers, and the files that may include them.
PRIVATE_HEADERS = {
    "transport-http.h": {"transport-http", "mcp-http"},
}
LEAF_HEADERS = {"compat.h", "config.h", "log.h", "xmalloc.h", "http.h",
                "nsexec.h", "merge.h", "gitignore.h", "transcript.h"}


def floor_of():
    m = {}
    for floor, names in FLOORS.items():
        for n in names.split():
            m[n] = floor
    return m


def includes(path):
    with open(path) as f:
        return re.findall(r'^#include "([^"]+)"', f.read(), re.M)


def test():
    floors = floor_of()
    sources = sorted(n[:-2] for n in os.listdir(SRC) if n.endswith(".c"))
    for n in sources:
        check(n in floors, "src/%s.c belongs to a floor (add it to"
              " FLOORS in tests/regress/floors.py)" % n)
    for n in floors:
        check(n in sources, "src/%s.c exists" % n)

    # Includes, of the sources and of the floors' own headers.
    for n in sources:
        fl = floors[n]
        for h in includes(os.path.join(SRC, n + ".c")):
            if h in LEAF_HEADERS:
                continue
            if h in PRIVATE_HEADERS:
                check(n in PRIVATE_HEADERS[h], "src/%s.c includes %s,"
                      " which only %s may" % (n, h,
                                              sorted(PRIVATE_HEADERS[h])))
                continue
            check(h in FLOOR_HEADERS, "src/%s.c includes %s, a header of"
                  " no floor" % (n, h))
            check(fl in FLOOR_HEADERS[h], "src/%s.c (%s) must not include"
                  " %s" % (n, fl, h))
    header_floor = {"sandbox-mcp.h": "base", "engine.h": "engine",
                    "op.h": "door", "surface.h": "surface"}
    for h, fl in header_floor.items():
        for inc in includes(os.path.join(SRC, h)):
            if inc in LEAF_HEADERS:
                continue
            check(fl in FLOOR_HEADERS.get(inc, set()), "%s (%s) must not"
                  " include %s" % (h, fl, inc))

    # The engine speaks of no tool, transport or MCP symbol.
    word = re.compile(r"\b(tool_\w+|TOOL_\w+|transport_\w+|mcp_\w+)\b")
    for n in sources:
        if floors[n] != "engine":
            continue
        with open(os.path.join(SRC, n + ".c")) as f:
            text = f.read()
        # Comments may name a tool by its MCP name; code may not.
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        found = sorted(set(word.findall(code)))
        check_eq(found, [], "surface symbols in src/%s.c" % n)

    # Only job.c reads a child's report ({"result"} or {"cause"}): no
    # other file below the surfaces looks those members up.
    report = re.compile(r'cJSON_GetObjectItem\w*\([^;]*"(result|cause)"')
    for n in sources:
        if n == "job" or RANK[floors[n]] > RANK["door"]:
            continue
        with open(os.path.join(SRC, n + ".c")) as f:
            found = report.findall(f.read())
        check_eq(found, [], "src/%s.c reads a child's report itself" % n)

    # The link graph of the built objects.
    defs, uses = {}, collections.defaultdict(set)
    for n in sources:
        # The zygote program's objects carry its name (per-program flags).
        obj = os.path.join(BUILD, OBJECT.get(n, n) + ".o")
        if not os.path.exists(obj):
            fail("no %s: build first" % obj)
        out = subprocess.run(["nm", obj], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defs[p[2]] = n
            elif len(p) == 2 and p[0] == "U":
                uses[n].add(p[1])
    edges = collections.defaultdict(set)
    for n, syms in uses.items():
        for s in syms:
            t = defs.get(s)
            if t is None or t == n:
                continue
            edges[n].add(t)
            if floors[n] == "main":
                continue
            check(RANK[floors[t]] <= RANK[floors[n]], "src/%s.c (%s) calls"
                  " up into src/%s.c (%s): %s" % (n, floors[n], t,
                                                  floors[t], s))
            check(not (floors[n] == "surface" and floors[t] == "engine"),
                  "src/%s.c reaches the engine (%s in src/%s.c) without"
                  " the door" % (n, s, t))
            # The door checks arguments and shapes results: the engine
            # runs the children.
            check(not (floors[n] == "door" and t == "job"),
                  "src/%s.c (the door) runs a child itself: %s" % (n, s))
            # ... and the engine speaks to the Docker Engine.
            check(not (floors[n] == "door" and t in ("docker",
                                                     "docker-http")),
                  "src/%s.c (the door) calls Docker itself: %s" % (n, s))

    # No cycle among engine files (Tarjan's strongly connected parts).
    engine = [n for n in sources if floors[n] == "engine"]
    index, low, stack, on, parts = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if floors.get(w) != "engine":
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            parts.append(sorted(part))

    for v in engine:
        if v not in index:
            visit(v)
    cycles = [p for p in parts if len(p) > 1]
    check_eq(cycles, [], "cycles among the engine files")


main(test)
