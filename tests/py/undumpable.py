"""undumpable.py MODULE [ARGS...]: python -m MODULE ARGS, in a process made non-dumpable first
(prctl(PR_SET_DUMPABLE, 0)): no ptrace, no pidfd_getfd of its descriptors, no /proc/PID/fd
links and no /proc/PID/ns/net for any other process but one with CAP_SYS_PTRACE.  Knows
nothing of socktune."""
import ctypes
import runpy
import sys

if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
    sys.exit("undumpable.py: prctl(PR_SET_DUMPABLE, 0) failed")
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
