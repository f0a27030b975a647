/// Runs of consecutive nodes that an interpreter with several threads runs as the stages of one
/// job of its pool (``ParallelRunner/forEachStaged(_:_:)``) instead of one job per node.
///
/// A node qualifies when its kernel does all its work in one split (``Kernel/runsInOneSplit``):
/// each stage piece then runs the kernel with a ``ParallelScope`` of that one piece. Between two
/// nodes the threads wait for each other on one counter, as the end of a job does, but the worker
/// goes straight on to its piece of the next node instead of waiting for the calling thread to
/// return to the node loop, set up the next kernel and publish its job. In a per-piece trace of
/// mobilenet_v1_0.25 float at 2 threads (quiet host) that was 0.3–0.5 µs per node (the calling
/// thread from the end of its piece to the next job's publication) plus 0.2 µs before the worker
/// started each piece; as one job of 14 stages the threads start each stage 0.08–0.17 µs after
/// the one before has ended. Each piece now sets its kernel up itself (both threads at once, where
/// the calling thread did it before publishing), so the model gained less than that: 0.4208 →
/// 0.4166 ms (medians of 12 alternating pairs of 400-invoke runs; 0.5–1.2% on the other float
/// models at 2 threads, docs/PERFORMANCE.md, session 28). Every node still computes the same
/// pieces with the same kernels, one node after the other, so the results, the arena plan and
/// the memory every node reads and writes are those of the node loop.
struct StagedNodes {
    /// One run of nodes: `first` ..< `first + counts.count`, node first + s in counts[s] pieces.
    struct Group {
        let first: Int
        let counts: [Int]
    }

    /// The groups in node order.
    let groups: [Group]
    /// Per node: the index in `groups` of the group it starts, or -1.
    let starts: [Int]

    /// No groups.
    static let none = StagedNodes(groups: [], nodeCount: 0)

    private init(groups: [Group], nodeCount: Int) {
        self.groups = groups
        var starts = [Int](repeating: -1, count: nodeCount)
        for (index, group) in groups.enumerated() { starts[group.first] = index }
        self.starts = starts
    }

    /// Plans the groups of `nodes` for `runner`'s thread count. `io(node, scope)` runs node's
    /// kernel with `scope`; here only with recording scopes, whose forEach runs nothing.
    init(nodes: [Model.Node], runner: ParallelRunner, io run: (_ node: Int, _ scope: ParallelScope) -> Void) {
        guard runner.threadCount > 1 else {
            self.init(groups: [], nodeCount: nodes.count)
            return
        }
        // Each node's split: its piece count, or 0 when it cannot be a stage.
        var counts = [Int](repeating: 0, count: nodes.count)
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 2) { split in
            guard let s = split.baseAddress else { return }
            for (index, node) in nodes.enumerated() where node.kernel.runsInOneSplit {
                s[0] = 0
                s[1] = 0
                run(index, ParallelScope(runner, recordingInto: s))
                // Exactly one forEach, of more than one piece (a single piece would keep the
                // other threads waiting at both ends of the stage).
                if s[0] == 1, s[1] > 1, s[1] <= 0xFFFF { counts[index] = s[1] }
            }
        }
        var groups: [Group] = []
        var index = 0
        while index < nodes.count {
            var end = index
            while end < nodes.count, counts[end] > 0 { end += 1 }
            if end - index >= 2 { groups.append(Group(first: index, counts: Array(counts[index..<end]))) }
            index = max(end, index + 1)
        }
        self.init(groups: groups, nodeCount: nodes.count)
    }
}
