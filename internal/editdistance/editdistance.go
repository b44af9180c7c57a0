// Package editdistance measures how far apart two names are, for the
// "did you mean" of a misspelt field or variable.
package editdistance

// Levenshtein is the number of single-byte insertions, deletions and
// substitutions that turn a into b (the names it is used for are ASCII),
// computed in two rows.
func Levenshtein(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
