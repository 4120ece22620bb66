package loadgen

import "testing"

func TestSequenceSteps(t *testing.T) {
	seen := map[uint64]bool{}
	for i := range 2 {
		s := newSequences(SequenceConfig{Length: 3, IDStart: 1}, Segment{Index: i, Count: 2}, false)
		var st sequenceState
		for k := range 9 {
			step := s.step(&st)
			if step.Start != (k%3 == 0) || step.End != (k%3 == 2) {
				t.Errorf("segment %d request %d: %+v", i, k, step)
			}
			if step.Start {
				if seen[step.ID] || step.ID == 0 {
					t.Errorf("sequence id %d reused or zero", step.ID)
				}
				seen[step.ID] = true
			}
		}
	}
	one := newSequences(SequenceConfig{Length: 1, IDStart: 1}, Segment{Count: 1}, false)
	if st := one.step(&sequenceState{}); !st.Start || !st.End {
		t.Errorf("a sequence of one: %+v", st)
	}
}
