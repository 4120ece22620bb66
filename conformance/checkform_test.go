package conformance_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// A check names its requirement once: Verify(x) in a spec labelled with one
// requirement, VerifyReq(id, x) in a spec labelled with several. The engine
// fails a spec that breaks the rule when it runs (TestCheckNamesItsRequirement
// in conformance/engine); this reads the spec bodies, so that a spec the
// reference server never runs (a feature it lacks) is held to it too.
// Checks inside helpers are the helpers' own (verifyAs in checks.go).
func TestChecksNameTheirRequirementOnce(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("suite", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("suite files: %v, %v", files, err)
	}
	checks := 0
	for _, path := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || callee(call) != "It" {
				return true
			}
			reqs := -1 // unknown: Req(ids...)
			for _, a := range call.Args {
				if r, ok := a.(*ast.CallExpr); ok && callee(r) == "Req" && !r.Ellipsis.IsValid() {
					reqs = len(r.Args)
				}
			}
			for _, a := range call.Args {
				body, ok := a.(*ast.FuncLit)
				if !ok || reqs < 0 {
					continue
				}
				ast.Inspect(body, func(n ast.Node) bool {
					c, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					switch name := callee(c); {
					case name == "Verify" && reqs != 1, name == "VerifyReq" && reqs == 1:
						t.Errorf("%s: %s in a spec labelled with %d requirement(s)", fset.Position(c.Pos()), name, reqs)
					case name == "Verify" || name == "VerifyReq":
						checks++
					}
					return true
				})
			}
			return false
		})
	}
	if checks < 100 {
		t.Errorf("read %d checks in spec bodies; the suite has hundreds", checks)
	}
}

func callee(c *ast.CallExpr) string {
	if id, ok := c.Fun.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
