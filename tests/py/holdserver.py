"""A server that stops accepting for a moment: listens (backlog as the app asks: 5), prints
"PORT n", waits until the file named by argv[1] exists (at most 10 s), then accepts
argv[2] connections and either exits normally or, with argv[3] == "hang", waits to be
killed."""
import os, socket, sys, time

ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.bind(("127.0.0.1", 0))
ls.listen(5)
print("PORT", ls.getsockname()[1], flush=True)
deadline = time.monotonic() + 10
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
ls.settimeout(10)
conns = [ls.accept()[0] for _ in range(int(sys.argv[2]))]
print("accepted", len(conns), flush=True)
if len(sys.argv) > 3 and sys.argv[3] == "hang":
    time.sleep(30)
