package testio

import "testing"

func TestResourceName(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		sep    byte
		hint   string
		n      int64
		want   string
	}{
		{"t_", '_', "TestFoo", 1, "t_testfoo_1"},
		{"t_", '_', "TestFoo/sub-case_2", 12, "t_testfoo_sub_case_2_12"},
		{"t_", '_', "TestÄ", 3, "t_test__3"}, // a rune, not a byte, per character
		{"t-", '-', "TestFoo/sub_case", 12, "t-testfoo-sub-case-12"},
		{"t-", '-', "TestAVeryLongNameThatGoesOnAndOnAndOnForeverAndEver", 4, "t-testaverylongnamethatgoesonandonandonf-4"},
	} {
		if got := ResourceName(tc.prefix, tc.sep, tc.hint, tc.n); got != tc.want {
			t.Errorf("ResourceName(%q, %q, %q, %d) = %q, want %q", tc.prefix, tc.sep, tc.hint, tc.n, got, tc.want)
		}
	}
}
