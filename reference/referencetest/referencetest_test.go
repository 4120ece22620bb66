package referencetest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
)

func TestStart(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxBodyBytes = 1 << 10 })
	if !strings.HasPrefix(srv.HTTPURL(), "http://127.0.0.1:") || !strings.HasPrefix(srv.GRPCAddr(), "127.0.0.1:") {
		t.Fatalf("addresses %q %q", srv.HTTPURL(), srv.GRPCAddr())
	}
	resp, err := http.Get(srv.HTTPURL() + "/v2/health/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("live: %d", resp.StatusCode)
	}
}
