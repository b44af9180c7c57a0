package connectors_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
)

// TestBodyNotDecodable: an answer whose gzip body is corrupt (not gzip at
// all, or cut or altered inside) came from the tool, so its outcome stays
// unknown as for any answer that could not be read whole, but the error
// says what went wrong: not a connection lost before the tool answered.
func TestBodyNotDecodable(t *testing.T) {
	t.Parallel()
	var good bytes.Buffer
	zw := gzip.NewWriter(&good)
	io.WriteString(zw, strings.Repeat("the answer ", 100))
	zw.Close()
	altered := bytes.Clone(good.Bytes())
	altered[len(altered)-5] ^= 0xff // the CRC-32
	bodies := map[string][]byte{"not gzip": []byte("plain words"), "altered": altered}
	for name, body := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(body)
		}))
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
		resp, err := connectors.Send(&http.Client{Transport: &http.Transport{}}, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err == nil {
			t.Fatalf("%s: the body read whole", name)
		}
		err = connectors.HTTPFailure(err)
		if k := connectortest.Kind(t, err); k != connectors.KindOutcomeUnknown || !strings.Contains(err.Error(), "could not be decompressed") {
			t.Errorf("%s: %s %v, want the outcome unknown, saying the answer could not be decompressed", name, k, err)
		}
	}
}
