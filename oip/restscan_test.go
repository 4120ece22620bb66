package oip

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/tensor"
)

// restScanSeeds are bodies on the scanner's edges: each is either taken by
// the fast path or handed to encoding/json, and must decode the same.
var restScanSeeds = []string{
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}]}`,
	` { "inputs" : [ { "data" : [ 1 , 2 ] , "name" : "a" , "shape" : [ 2 ] , "datatype" : "INT32" } ] } `,
	`{"Inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"NAME":"a","shape":[2],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputſ":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}],"inputs":[{"name":"b"}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2],"data":[3,4]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","datatype":"FP32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}],"in\u0070uts":[]}`,
	`{"inputs":[{"name":"a\u00e9","shape":[2],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT\u0033\u0032","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[ 2 , 1 ],"datatype":"FP32","data":[[1.5],[2e-3]]}],"id":"x","parameters":{"a":1,"b":[1,{"c":null}],"d":1e400}}`,
	`{"inputs":[{"name":"a","shape":[2.0],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[02],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[-2],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[99999999999999999999],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2,3]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,"x"]}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}]}x`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}],}`,
	`{"inputs":null}`, `{"inputs":[null]}`, `{"inputs":{}}`, `{"inputs":[]}`, `null`, `[]`, `{}`, ``, ` `,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"BYTES","data":["x","y\n"]}],"outputs":[{"name":"o","parameters":{"binary_data":true}}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}],"outputs":[{"name":"o"},{"name":"o"}],"outputs":[]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2]}],"outputs":[{"Name":"o"}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":8}}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2],"parameters":{"binary_data_size":8}}]}`,
	`{"inputs":[{"name":"a","shape":[100],"datatype":"INT32","data":[1,2]}]}`,
	`{"inputs":[{"name":"a","shape":[4],"datatype":"INT8","data":[[[[1]]],2,3,4]}]}`,
	`{"inputs":[{"name":"a","shape":[1],"datatype":"FP32","data":["NaN"]}],"x":{"y":[true,false,null,"\ud800"]}}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":8,"binary_data_size":8}}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","parameters":{"x":1,"binary_data_size":"8"}}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":null}}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":-1,"y":true}}]}`,
	`{"inputs":[{"name":"a","shape":[2],"datatype":"INT32","data":[1,2],"parameters":{"y":"z"}}]}`,
	"{\"inputs\":[{\"name\":\"\xff\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[1]}]}",
	"{\"inputs\":[{\"name\":\"a\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[1]}],\"id\":\"\x01\"}",
}

func FuzzDecodeRESTRequestDifferential(f *testing.F) {
	for _, s := range restScanSeeds {
		f.Add([]byte(s), -1, false)
		f.Add([]byte(s), -1, true)
	}
	bin, hl, err := EncodeRESTRequest(&InferRequest{Inputs: []InferInput{
		{Tensor: tensor.Tensor{Name: "a", Datatype: tensor.FP32, Shape: []int64{2}, Data: []float32{1, 2}}},
	}}, RESTEncoding{BinaryInputs: true, BinaryOutputs: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bin, hl, false)
	f.Fuzz(func(t *testing.T, body []byte, headerLen int, limited bool) {
		lim := Limits{}
		if limited {
			lim.MaxElements = 3
		}
		got, err := decodeRESTRequest(body, headerLen, lim, true, false)
		want, wantErr := decodeRESTRequest(body, headerLen, lim, false, false)
		if msg := differ(got, err, want, wantErr); msg != "" {
			t.Fatalf("%q (header length %d): %s", body, headerLen, msg)
		}
	})
}

func FuzzDecodeRESTResponseDifferential(f *testing.F) {
	for _, s := range restScanSeeds {
		f.Add([]byte(s), -1)
		f.Add([]byte(`{"model_name":"m","model_version":"1","outputs":`+s+`}`), -1)
	}
	f.Add([]byte(`{"model_name":"m","id":"i","parameters":{"p":1},"outputs":[{"name":"o","shape":[1],"datatype":"INT32","data":[1]}]}`), -1)
	f.Add([]byte(`{"Model_Name":"m","outputs":[]}`), -1)
	f.Fuzz(func(t *testing.T, body []byte, headerLen int) {
		got, err := decodeRESTResponse(body, headerLen, true)
		want, wantErr := decodeRESTResponse(body, headerLen, false)
		if msg := differ(got, err, want, wantErr); msg != "" {
			t.Fatalf("%q (header length %d): %s", body, headerLen, msg)
		}
	})
}

// TestRESTScanSeeds runs the seeds in `go test` too.
func TestRESTScanSeeds(t *testing.T) {
	for _, s := range restScanSeeds {
		for _, lim := range []Limits{{}, {MaxElements: 3}} {
			got, err := decodeRESTRequest([]byte(s), -1, lim, true, false)
			want, wantErr := decodeRESTRequest([]byte(s), -1, lim, false, false)
			if msg := differ(got, err, want, wantErr); msg != "" {
				t.Errorf("%s: %s", s, msg)
			}
		}
	}
}

// differ describes how two decodes differ: the error text, or the decoded
// message down to the Go types of parameters and the bits of the data.
func differ[T any](got *T, err error, want *T, wantErr error) string {
	switch {
	case (err == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, encoding/json %v", err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			return fmt.Sprintf("error %q, encoding/json %q", err, wantErr)
		}
		return ""
	}
	if g, w := dump(reflect.ValueOf(got)), dump(reflect.ValueOf(want)); g != w {
		return fmt.Sprintf("decoded\n%s\nencoding/json\n%s", g, w)
	}
	return ""
}

// dump prints v with the dynamic type of every interface value, floats as
// bits and nil apart from empty, so that two dumps are equal only for
// identical decodes.
func dump(v reflect.Value) string {
	var b strings.Builder
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Invalid:
			b.WriteString("invalid")
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			if v.Kind() == reflect.Interface {
				fmt.Fprintf(&b, "(%s)", v.Elem().Type())
			}
			walk(v.Elem())
		case reflect.Struct:
			b.WriteString("{")
			for i := range v.NumField() {
				fmt.Fprintf(&b, "%s:", v.Type().Field(i).Name)
				walk(v.Field(i))
				b.WriteString(",")
			}
			b.WriteString("}")
		case reflect.Slice, reflect.Map:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			if v.Kind() == reflect.Map {
				keys := v.MapKeys()
				sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
				b.WriteString("map[")
				for _, k := range keys {
					fmt.Fprintf(&b, "%q:", k.String())
					walk(v.MapIndex(k))
					b.WriteString(",")
				}
				b.WriteString("]")
				return
			}
			fallthrough
		case reflect.Array:
			b.WriteString("[")
			for i := range v.Len() {
				walk(v.Index(i))
				b.WriteString(",")
			}
			b.WriteString("]")
		case reflect.Float32, reflect.Float64:
			fmt.Fprintf(&b, "%x", math.Float64bits(v.Float()))
		default:
			fmt.Fprintf(&b, "%#v", v.Interface())
		}
	}
	walk(v)
	return b.String()
}

// TestTensorParameters checks the fast path of tensorParameters, which takes
// binary_data_size out without a map, against encoding/json's decode with
// the member deleted afterwards.
func TestTensorParameters(t *testing.T) {
	for _, raw := range []string{
		`{"binary_data_size":64}`, `{"binary_data_size":64,"a":true}`, `{"a":"x","binary_data_size":0}`,
		`{"binary_data_size":1.5}`, `{"binary_data_size":"8"}`, `{"binary_data_size":-3}`, `{"binary_data_size":null}`,
		`{"binary_data_size":1,"binary_data_size":2}`, `{"a":1,"a":2}`, `{}`, `{"a":1}`, `null`, ``,
		`{"binary_data_size":18446744073709551615}`, `{"binary_data_size":1e400}`, `[]`, `{"b":[1]}`,
	} {
		p, size, has, err := tensorParameters(json.RawMessage(raw))
		var want Parameters
		var wantErr error
		if !absent(json.RawMessage(raw)) {
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.UseNumber()
			var m map[string]any
			if wantErr = dec.Decode(&m); wantErr == nil && m == nil {
				wantErr = errors.New("not an object")
			}
			for k, v := range m {
				m[k] = convertNumbers(v)
			}
			want = m
		}
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json %v", raw, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		wantSize, wantHas := want[ParamBinaryDataSize]
		delete(want, ParamBinaryDataSize)
		if len(want) == 0 {
			want = nil
		}
		if has != wantHas || fmt.Sprintf("%T %v", size, size) != fmt.Sprintf("%T %v", wantSize, wantSize) {
			t.Errorf("%s: binary_data_size %T %v (present %v), want %T %v (present %v)", raw, size, size, has, wantSize, wantSize, wantHas)
		}
		if fmt.Sprintf("%#v", p) != fmt.Sprintf("%#v", want) {
			t.Errorf("%s: parameters %#v, want %#v", raw, p, want)
		}
	}
}
