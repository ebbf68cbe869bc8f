"""A pipe whose buffer is full before anyone writes to it: a writer blocks at once (or fails
with EAGAIN when it does not block), which is how a stuck reader looks from the writer's side.
"""
import fcntl
import os

F_SETPIPE_SZ = 1031


def full_pipe(size=4096):
    """(read end, write end) of a pipe of size bytes (one page by default), filled."""
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, size)
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 512)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    return r, w
