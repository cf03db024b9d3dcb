package checkpoint

import "time"

// SetPruneGrace sets how recently written chunks Prune spares.
func SetPruneGrace(d *Dir, g time.Duration) { d.grace = g }
