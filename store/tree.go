package store

// LineageDepths returns the depth of each node of an agent session's
// tree as AgentBranches.History lists them (parents before children): 0
// for a root, the parent's depth + 1 for any other node. The CLI and the
// console indent the tree by it.
func LineageDepths(nodes []LineageNode) []int {
	return treeDepths(nodes, func(n LineageNode) (int64, int64) { return n.ID, n.Parent })
}

// ConversationDepths is LineageDepths for a conversation's tree
// (ConversationBranches.History).
func ConversationDepths(nodes []ConversationNode) []int {
	return treeDepths(nodes, func(n ConversationNode) (string, string) { return n.ID, n.Parent })
}

// treeDepths returns the depth of each node, parents listed before their
// children; ids gives a node's id and its parent's (the zero value: none).
func treeDepths[N any, K comparable](nodes []N, ids func(N) (id, parent K)) []int {
	var none K
	depth := make(map[K]int, len(nodes))
	out := make([]int, len(nodes))
	for i, n := range nodes {
		id, parent := ids(n)
		if parent != none {
			out[i] = depth[parent] + 1
		}
		depth[id] = out[i]
	}
	return out
}
