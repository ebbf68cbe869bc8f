#!/bin/sh
# The container examples' policy is the one an operator sets in the environment.  No Docker
# engine or cluster here: each container's command line is run as the file gives it, parsed
# from the file: the image's ENTRYPOINT (examples/docker/Dockerfile.*, the runtime stage) with
# the environment the container would get (the image's ENV, then `docker run -e`; for
# Kubernetes the ConfigMap of envFrom, then env:; for compose, environment:), the build's
# socktune in place of "socktune" and, in place of CMD or args, a python server that reads
# from the kernel its listener's backlog and TCP_NODELAY on its accepted connection.
#   - as shipped: the values of the environment (the backlog cut to somaxconn), and no line
#     saying an option overrides a variable;
#   - edited (docker run -e, the ConfigMap, compose's environment: with SOCKTUNE_BACKLOG=77
#     and SOCKTUNE_NODELAY=0): the server gets 77 and 0 (before, the ENTRYPOINT's
#     --nodelay --backlog 4096 won: 4096 and 1, silently);
#   - each `docker run ... -e VAR=value IMAGE` in examples/docker/README.md followed by a
#     "# socktune: MESSAGE" comment exits 2 with MESSAGE and the server never starts (before,
#     -e SOCKTUNE_BACKLOG=lots started it: the option won); a bad value in the ConfigMap, the
#     same (its README says so).
# The wrapper's own line when an option does override a variable: t_env_override.
. "$(dirname "$0")/lib.sh"
for v in $(env | sed -n 's/^\(SOCKTUNE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
[ -x "$CLI" ] || { fail examples_env "$CLI not built"; exit 0; }
cd "$ROOT" || exit 1

$PY - "$CLI" "$PY" "$ROOT" "$TMP" <<'EOF'
import json, os, re, select, shlex, socket, subprocess, sys, time
cli, py, root, tmp = sys.argv[1:5]
somaxconn = int(open("/proc/sys/net/core/somaxconn").read())

def result(ok, name, why):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)), flush=True)

def joined(path):
    """The file's lines, backslash continuations joined, comments dropped."""
    out, cont = [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if line.lstrip().startswith("#") and not cont:
            continue
        if line.endswith("\\"):
            cont += line[:-1] + " "
            continue
        out.append(cont + line)
        cont = ""
    return out

def dockerfile(path):
    """The runtime stage (after the last FROM): its SOCKTUNE_* ENV, ENTRYPOINT and CMD."""
    env, entry, cmd = {}, None, None
    for line in joined(path):
        word = line.split(None, 1)
        if not word:
            continue
        op, rest = word[0].upper(), (word[1] if len(word) > 1 else "")
        if op == "FROM":
            env, entry, cmd = {}, None, None
        elif op == "ENV":
            pairs = shlex.split(rest)
            if pairs and "=" not in pairs[0]:  # the old form: ENV KEY value
                pairs = ["%s=%s" % (pairs[0], " ".join(pairs[1:]))]
            for p in pairs:
                k, v = p.split("=", 1)
                env[k] = v
        elif op == "ENTRYPOINT":
            entry = json.loads(rest)
        elif op == "CMD":
            cmd = json.loads(rest)
    return {k: v for k, v in env.items() if k.startswith("SOCKTUNE_")}, entry, cmd

def scalar(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1]
    return v

def yaml_docs(path):
    """A small reader for the shapes these manifests use: block mappings and lists of
    mappings, flow lists of strings, quoted or plain scalars.  Not YAML in general."""
    docs = []
    for text in open(path).read().split("\n---"):
        lines = [l for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#")]
        def block(i, indent):
            # the node whose lines start at lines[i], at least `indent` deep: (node, next i)
            if i >= len(lines):
                return None, i
            first = lines[i]
            ind = len(first) - len(first.lstrip())
            if first.lstrip().startswith("- "):
                items = []
                while i < len(lines):
                    l = lines[i]
                    li = len(l) - len(l.lstrip())
                    if li != ind or not l.lstrip().startswith("- "):
                        break
                    # the item: its first line with "- " turned into spaces
                    lines[i] = " " * (li + 2) + l.lstrip()[2:]
                    node, i = block(i, li + 2)
                    items.append(node)
                return items, i
            m = {}
            while i < len(lines):
                l = lines[i]
                li = len(l) - len(l.lstrip())
                if li < ind or l.lstrip().startswith("- ") and li == ind:
                    break
                k, _, v = l.strip().partition(":")
                v = v.strip()
                i += 1
                if v.startswith("["):
                    m[k] = [scalar(x) for x in v[1:-1].split(",") if x.strip()]
                elif v:
                    m[k] = scalar(v)
                elif i < len(lines) and (len(lines[i]) - len(lines[i].lstrip()) > li or
                                         lines[i].lstrip().startswith("- ")):
                    m[k], i = block(i, li + 1)
                else:
                    m[k] = None
            return m, i
        node, _ = block(0, 0)
        if node:
            docs.append(node)
    return docs

def image_file(image):
    tag = image.rsplit(":", 1)[-1]
    return os.path.join(root, "examples/docker/Dockerfile." + tag)

def run(name, env, argv):
    """The container's command line, its program replaced by optserver: (status or None
    when it started, stderr, backlog, nodelay)."""
    if not argv or argv[0] != "socktune":
        return ("not socktune: %s" % argv, "", None, None)
    cut = argv.index("--") if "--" in argv else len(argv)
    line = [cli] + argv[1:cut] + ["--", py, os.path.join(root, "tests/py/optserver.py"),
                                  "--count", "1"]
    full = {"PATH": os.environ["PATH"]}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):  # (a sanitizer build's runtime options)
        if k in os.environ:
            full[k] = os.environ[k]
    full.update(env)
    if "SOCKTUNE_STATS" in full:  # (the manifest's path is the container's: one of ours here)
        full["SOCKTUNE_STATS"] = os.path.join(tmp, name + ".stats")
    if "SOCKTUNE_LOG_FILE" in full:
        full["SOCKTUNE_LOG_FILE"] = os.path.join(tmp, name + ".log")
    err = open(os.path.join(tmp, name + ".err"), "w+")
    p = subprocess.Popen(line, env=full, stdout=subprocess.PIPE, stderr=err)
    status = backlog = nodelay = None
    first = b""
    if select.select([p.stdout], [], [], 15)[0]:
        first = p.stdout.readline()
    if first:
        port = json.loads(first)["port"]
        backlog = json.loads(first)["listener"]["backlog"]
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.send(b"x"); s.recv(1); s.close()
        except OSError:
            pass
        if select.select([p.stdout], [], [], 15)[0]:
            second = p.stdout.readline()
            nodelay = json.loads(second).get("nodelay") if second else None
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill(); rc = p.wait()
    if not first:
        status = rc
    err.seek(0)
    return status, err.read(), backlog, nodelay

def expect(name, env, argv, backlog, nodelay):
    """The server started with that backlog and nodelay, and no option overrode a variable."""
    want_b = min(int(backlog), somaxconn)
    want_n = 1 if nodelay in ("1", "yes", "on", "true") else 0
    status, err, b, n = run(name, env, argv)
    over = [l for l in err.splitlines() if " overrides SOCKTUNE_" in l]
    result(status is None and b == want_b and n == want_n and not over, name,
           "%s with %s: backlog %s (want %d), nodelay %s (want %d)%s%s" % (
               " ".join(argv), " ".join("%s=%s" % kv for kv in sorted(env.items())), b, want_b,
               n, want_n, "" if status is None else ", exited %s before serving" % status,
               (": " + " | ".join(over)) if over else (": " + err.strip()[:300] if status else "")))

def refused(name, env, argv, message):
    status, err, b, n = run(name, env, argv)
    result(status == 2 and message in err and b is None, name,
           "%s with %s: %s (want status 2 and '%s', the server not started): %s" % (
               " ".join(argv), " ".join("%s=%s" % kv for kv in sorted(env.items())),
               "started (backlog %s)" % b if status is None else "status %s" % status,
               message, err.strip()[:300]))

EDIT = {"SOCKTUNE_BACKLOG": "77", "SOCKTUNE_NODELAY": "0"}

# ---- Docker: each image's ENTRYPOINT with its ENV, then with docker run -e ----
images = {}
for f in sorted(os.listdir(os.path.join(root, "examples/docker"))):
    if not f.startswith("Dockerfile."):
        continue
    env, entry, cmd = dockerfile(os.path.join(root, "examples/docker", f))
    images[f] = (env, entry, cmd)
    tag = f.split(".", 1)[1]
    if entry is None or "SOCKTUNE_BACKLOG" not in env and "--backlog" not in entry:
        result(False, "docker.%s.parsed" % tag, "ENTRYPOINT %s, ENV %s" % (entry, env))
        continue
    argv = entry + (cmd or [])
    if "SOCKTUNE_BACKLOG" in env:
        expect("docker.%s.as-shipped" % tag, env, argv, env["SOCKTUNE_BACKLOG"],
               env.get("SOCKTUNE_NODELAY", "0"))
    else:
        result(False, "docker.%s.as-shipped" % tag, "the image's ENV sets no SOCKTUNE_BACKLOG "
               "(ENTRYPOINT %s): the policy is not where docker run -e changes it" % entry)
    e = dict(env); e.update(EDIT)
    expect("docker.%s.run-e-changes-policy" % tag, e, argv, "77", "0")

# the README's `docker run -e ... IMAGE` lines followed by "# socktune: MESSAGE"
lines = open(os.path.join(root, "examples/docker/README.md")).read().split("\n")
k = 0
for i, line in enumerate(lines):
    if not line.startswith("docker run ") or " -e " not in line:
        continue
    nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
    words = shlex.split(line)
    env, image, j = {}, None, 2
    while j < len(words):
        if words[j] == "-e":
            kk, v = words[j + 1].split("=", 1); env[kk] = v; j += 2
        elif words[j] in ("-p", "--sysctl", "--name"):
            j += 2
        elif words[j].startswith("-"):
            j += 1
        else:
            image = words[j]; break
    rest = words[j + 1:]
    base = images.get(os.path.basename(image_file(image or "")))
    if not base:
        continue
    k += 1
    ienv, entry, cmd = base
    full = dict(ienv); full.update(env)
    argv = entry + (rest or cmd or [])
    name = "docker.readme-run-%d" % k
    if nxt.startswith("# socktune: "):
        refused(name + ".refused", full, argv, nxt[len("# "):])
    elif not rest:
        status, err, b, n = run(name, full, argv)
        result(status is None, name + ".starts", "%s: status %s: %s" % (line, status, err[:300]))
result(k >= 2, "docker.readme-runs-found", "%d `docker run -e` lines found in the README" % k)

# ---- Kubernetes: the web container, its ConfigMap as shipped and edited ----
docs = yaml_docs(os.path.join(root, "examples/kubernetes/deployment.yaml"))
maps = {d["metadata"]["name"]: d.get("data") or {} for d in docs if d.get("kind") == "ConfigMap"}
n = 0
for d in docs:
    if d.get("kind") != "Deployment":
        continue
    for c in d["spec"]["template"]["spec"]["containers"]:
        base = images.get(os.path.basename(image_file(c["image"])))
        if not base:
            continue
        ienv, entry, cmd = base
        argv = (c.get("command") or entry) + (c.get("args") or ([] if c.get("command") else cmd))
        def container_env(cm):
            e = dict(ienv)
            for src in c.get("envFrom") or []:
                e.update(cm[src["configMapRef"]["name"]])
            for v in c.get("env") or []:
                e[v["name"]] = v.get("value", "")
            return {k: v for k, v in e.items() if k.startswith("SOCKTUNE_")}
        for cmname in [s["configMapRef"]["name"] for s in c.get("envFrom") or []]:
            n += 1
            e = container_env(maps)
            expect("kubernetes.%s.as-shipped" % c["name"], e, argv,
                   e.get("SOCKTUNE_BACKLOG", "0"), e.get("SOCKTUNE_NODELAY", "0"))
            edited = {k: dict(v) for k, v in maps.items()}
            edited[cmname].update(EDIT)
            expect("kubernetes.%s.configmap-changes-policy" % c["name"], container_env(edited),
                   argv, "77", "0")
            edited[cmname]["SOCKTUNE_BACKLOG"] = "lots"
            refused("kubernetes.%s.configmap-bad-value" % c["name"], container_env(edited), argv,
                    "SOCKTUNE_BACKLOG=lots: not a whole number")
result(n >= 1, "kubernetes.found", "no container of a Deployment with a ConfigMap found")

# ---- Compose: the service's environment:, as shipped and edited ----
docs = yaml_docs(os.path.join(root, "examples/docker-compose/compose.yaml"))
n = 0
for svc_name, svc in (docs[0].get("services") or {}).items():
    build = svc.get("build") or {}
    base = images.get(os.path.basename(build.get("dockerfile", "") or image_file(svc.get("image", ""))))
    if not base:
        continue
    n += 1
    ienv, entry, cmd = base
    argv = (svc.get("entrypoint") or entry) + (svc.get("command") or cmd or [])
    e = dict(ienv); e.update(svc.get("environment") or {})
    expect("compose.%s.as-shipped" % svc_name, e, argv, e.get("SOCKTUNE_BACKLOG", "0"),
           e.get("SOCKTUNE_NODELAY", "0"))
    e.update(EDIT)
    expect("compose.%s.environment-changes-policy" % svc_name, e, argv, "77", "0")
result(n >= 1, "compose.found", "no service built from examples/docker found")
EOF
