// A Go net/http server for the tests (Go does not use libc's socket calls: LD_PRELOAD never
// reaches it).  It listens on 127.0.0.1, on the port given as its argument (else one the
// kernel picks), prints "PORT n", and answers GET / with the options the kernel reports on
// the ACCEPTED connection: "rcvbuf=N delack_max_us=N".
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

type connKey struct{}

func main() {
	port := "0"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("PORT %d\n", ln.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := r.Context().Value(connKey{}).(*net.TCPConn)
			raw, _ := c.SyscallConn()
			var rcvbuf, delack int
			raw.Control(func(fd uintptr) {
				rcvbuf, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
				delack, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, 46) // TCP_DELACK_MAX_US
			})
			fmt.Fprintf(w, "rcvbuf=%d delack_max_us=%d\n", rcvbuf, delack)
		}),
	}
	go func() { time.Sleep(30 * time.Second); os.Exit(0) }()
	srv.Serve(ln)
}
