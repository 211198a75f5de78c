package chaos

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer answers every line with itself.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	return r.ReadString('\n')
}

func TestBlackholeHoldsTheConnectionAndForwardsNothing(t *testing.T) {
	w := newWire()
	defer w.close()
	addr, err := w.link("worker-1", endPostgres, echoServer(t))
	require.NoError(t, err)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	got, err := roundTrip(c, r, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping\n", got)

	hole := toxic{name: "blackhole", kind: "timeout", attributes: map[string]any{"timeout": 0}}
	links := w.between("worker-1", endPostgres)
	require.Len(t, links, 1)
	require.NoError(t, apply(links, hole))
	_, err = roundTrip(c, r, 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "no answer and no reset while the blackhole holds")
	require.True(t, ne.Timeout())

	// The lift closes what the blackhole held (the bytes it dropped are gone); a new
	// connection goes through.
	require.NoError(t, lift(context.Background(), links, hole))
	_, err = roundTrip(c, r, 5*time.Second)
	require.Error(t, err)
	require.False(t, errorIsTimeout(err), "closed, not silent: %v", err)
	c2, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c2.Close()
	got, err = roundTrip(c2, bufio.NewReader(c2), 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping\n", got)
}

func errorIsTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestSplitCutsOneLinkOfOneProcess(t *testing.T) {
	w := newWire()
	defer w.close()
	up := echoServer(t)
	for _, from := range []string{"worker-1", "worker-2"} {
		for _, to := range []string{endPostgres, endTemporal} {
			_, err := w.link(from, to, up)
			require.NoError(t, err)
		}
	}
	require.Len(t, w.all(), 4)
	require.Len(t, w.to(endPostgres), 2)
	cut := w.between("worker-2", endPostgres)
	require.Len(t, cut, 1)
	require.Equal(t, "worker-2→postgres", cut[0].name())
}

func TestResetSendsARST(t *testing.T) {
	w := newWire()
	defer w.close()
	addr, err := w.link("agent-sim-1", "api-1", echoServer(t))
	require.NoError(t, err)
	links := w.all()
	reset := toxic{name: "reset", kind: "reset_peer", attributes: map[string]any{"timeout": 0}}
	require.NoError(t, apply(links, reset))
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = roundTrip(c, bufio.NewReader(c), 5*time.Second)
	require.Error(t, err, "the connection is reset once it carries a byte")
	require.False(t, errorIsTimeout(err))
	require.NoError(t, lift(context.Background(), links, reset))
}

func TestWirePlanHasEveryNetworkFaultInOrder(t *testing.T) {
	for _, p := range []Profile{Full, Short} {
		plan := planWire(p, rand.New(rand.NewPCG(7, 7)))
		var kinds []string
		for i, f := range plan {
			kinds = append(kinds, f.kind)
			if i > 0 {
				require.GreaterOrEqual(t, f.at, plan[i-1].at+plan[i-1].hold, "%s: one fault at a time", p.Name)
			}
			if f.kind == faultBlackholePG || f.kind == faultBlackholeTemporal {
				require.GreaterOrEqual(t, f.hold, p.BlackholeMin)
				require.LessOrEqual(t, f.hold, p.BlackholeMax)
			}
		}
		require.Equal(t, []string{faultLatency, faultBandwidth, faultBlackholePG, faultSplitPG, faultReset, faultSplitTemporal, faultBlackholeTemporal}, kinds, p.Name)
		last := plan[len(plan)-1]
		require.Less(t, last.at+last.hold, time.Duration(float64(p.FaultPhase)*p.RestartsFrom), "%s: the network faults end before the server restarts", p.Name)
		require.Equal(t, p.WorkerKills+3+len(plan), p.Faults())
	}
	require.GreaterOrEqual(t, Full.LatencyFor, 2*time.Minute, "latency for minutes")
	require.Equal(t, 30*time.Second, Full.BlackholeMin)
	require.Equal(t, 90*time.Second, Full.BlackholeMax)
}
