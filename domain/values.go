package domain

// Join lists typed values for a message ("a, b, c").
func Join[T ~string](vs []T) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += string(v)
	}
	return s
}
