import MediaIO

/// A SORT-style multi-object tracker: a constant-velocity motion model per object and greedy
/// assignment of detections to predicted boxes by overlap (IoU).
///
/// IDs are non-negative integers from 0, in order of first appearance. An object that the detector
/// misses is kept, at its predicted position, for up to ``maximumMissedFrames`` frames (default 2:
/// a detector that misses a still-present object for a frame or two has not lost it); after that
/// its ID is retired and a returning object gets a new ID, as in ML Kit. Not thread-safe: one
/// tracker follows one stream.
public final class ObjectTracker: @unchecked Sendable {
    /// One tracked object.
    public struct Track: Sendable, Hashable {
        /// The object's tracking ID.
        public let id: Int
        /// The object's box in this frame (detected, or predicted while bridged over a miss).
        public var rect: Rect
        /// The detection matched in this frame, or nil while the object is bridged over a miss.
        public var detection: DetectedBox?
        /// Consecutive frames without a matching detection.
        public var missedFrames: Int
        /// Frames with a matching detection so far.
        public var hits: Int
        var velocity: (x: Double, y: Double, w: Double, h: Double)

        /// Same ID, box and missed-frame count.
        public static func == (a: Track, b: Track) -> Bool { a.id == b.id && a.rect == b.rect && a.missedFrames == b.missedFrames }
        /// Hashes the ID.
        public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    }

    /// Frames an unseen object is kept before its ID is retired.
    public let maximumMissedFrames: Int
    /// Minimum IoU between a predicted box and a detection to match them.
    public let matchThreshold: Double
    private(set) public var tracks: [Track] = []
    private var nextID = 0

    /// A tracker with no tracks yet.
    ///
    /// - Parameters:
    ///   - maximumMissedFrames: Frames an unseen object keeps its ID (negative values count as 0).
    ///   - matchThreshold: Minimum IoU for a detection to continue a track.
    public init(maximumMissedFrames: Int = 2, matchThreshold: Double = 0.3) {
        self.maximumMissedFrames = max(0, maximumMissedFrames)
        self.matchThreshold = matchThreshold
    }

    /// Advances one frame with this frame's detections; returns the live tracks (matched ones and
    /// those bridged over a miss), oldest first.
    @discardableResult
    public func update(_ detections: [DetectedBox]) -> [Track] {
        // Predict.
        var predicted = tracks.map { track -> Track in
            var t = track
            t.rect = Rect(x: t.rect.x + t.velocity.x, y: t.rect.y + t.velocity.y,
                          width: max(1, t.rect.width + t.velocity.w), height: max(1, t.rect.height + t.velocity.h))
            t.detection = nil
            return t
        }
        // Greedy assignment by IoU, highest first; same-class pairs win ties.
        var pairs: [(track: Int, detection: Int, score: Double)] = []
        for (ti, track) in predicted.enumerated() {
            for (di, detection) in detections.enumerated() {
                let iou = track.rect.iou(detection.rect)
                guard iou >= matchThreshold else { continue }
                let sameClass = tracks[ti].detection.map { $0.classIndex == detection.classIndex } ?? false
                pairs.append((ti, di, iou + (sameClass ? 1e-3 : 0)))
            }
        }
        pairs.sort { $0.score > $1.score }
        var trackTaken = Set<Int>(), detectionTaken = Set<Int>()
        for pair in pairs where !trackTaken.contains(pair.track) && !detectionTaken.contains(pair.detection) {
            trackTaken.insert(pair.track)
            detectionTaken.insert(pair.detection)
            let old = tracks[pair.track].rect, new = detections[pair.detection].rect
            var t = predicted[pair.track]
            let alpha = 0.5
            t.velocity = (alpha * (new.x - old.x) + (1 - alpha) * t.velocity.x,
                          alpha * (new.y - old.y) + (1 - alpha) * t.velocity.y,
                          alpha * (new.width - old.width) + (1 - alpha) * t.velocity.w,
                          alpha * (new.height - old.height) + (1 - alpha) * t.velocity.h)
            t.rect = new
            t.detection = detections[pair.detection]
            t.missedFrames = 0
            t.hits += 1
            predicted[pair.track] = t
        }
        for index in predicted.indices where !trackTaken.contains(index) {
            predicted[index].missedFrames += 1
        }
        predicted.removeAll { $0.missedFrames > maximumMissedFrames }
        for (di, detection) in detections.enumerated() where !detectionTaken.contains(di) {
            predicted.append(Track(id: nextID, rect: detection.rect, detection: detection, missedFrames: 0, hits: 1, velocity: (0, 0, 0, 0)))
            nextID += 1
        }
        tracks = predicted
        return tracks
    }

    /// Forgets every object (IDs keep increasing).
    public func reset() { tracks = [] }
}
