//go:build !unix

package benchkit

import "time"

// processCPU is unknown here: rounds report no CPU time.
func processCPU() time.Duration { return 0 }
