import EdgeVision
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// `ObjectTracker` on synthetic detection sequences with known ground truth (pure arithmetic: runs
/// in debug builds). Every scenario is a set of objects with a box per frame (nil while the object
/// is not detected); the detections of a frame are shuffled with a seeded generator so that the
/// order of detections cannot be what keeps the IDs apart.
final class ObjectTrackerTests: XCTestCase {
    /// One ground-truth object: its box in every frame, nil where the detector does not see it.
    struct Truth {
        var name: String
        var boxes: [Rect?]
        var classIndex = 0
    }

    /// What the tracker said about one object in one frame.
    struct Observation {
        /// ID of the track whose matched detection is this object's box (nil: object not detected,
        /// or detected but matched to no track — which cannot happen, see `run`).
        var id: Int?
    }

    /// Runs the tracker over the scenario. Returns, per object and frame, the ID of the track that
    /// took the object's detection, and all returned tracks per frame.
    func run(_ truths: [Truth], tracker: ObjectTracker, seed: UInt64 = 1,
             file: StaticString = #filePath, line: UInt = #line) -> (ids: [[Int?]], tracks: [[ObjectTracker.Track]]) {
        let frames = truths.map(\.boxes.count).max() ?? 0
        var generator = SeededGenerator(seed: seed)
        var ids = Array(repeating: [Int?](repeating: nil, count: frames), count: truths.count)
        var allTracks: [[ObjectTracker.Track]] = []
        for frame in 0..<frames {
            var detections: [(object: Int, box: DetectedBox)] = []
            for (index, truth) in truths.enumerated() {
                if frame < truth.boxes.count, let rect = truth.boxes[frame] {
                    detections.append((index, DetectedBox(rect: rect, classIndex: truth.classIndex, score: 0.8, label: nil)))
                }
            }
            detections.shuffle(using: &generator)
            let tracks = tracker.update(detections.map(\.box))
            allTracks.append(tracks)
            // Every detection becomes (or continues) exactly one track.
            XCTAssertEqual(tracks.filter { $0.detection != nil }.count, detections.count, "frame \(frame)", file: file, line: line)
            for (object, box) in detections {
                let owners = tracks.filter { $0.detection == box }
                XCTAssertEqual(owners.count, 1, "frame \(frame): \(truths[object].name)", file: file, line: line)
                ids[object][frame] = owners.first?.id
                XCTAssertEqual(owners.first?.rect, box.rect, "a matched track reports the detection's box", file: file, line: line)
            }
            // IDs are unique within a frame and returned oldest first.
            let frameIDs = tracks.map(\.id)
            XCTAssertEqual(Set(frameIDs).count, frameIDs.count, "frame \(frame)", file: file, line: line)
            XCTAssertEqual(frameIDs, frameIDs.sorted(), "frame \(frame): tracks oldest first", file: file, line: line)
        }
        return (ids, allTracks)
    }

    /// A box moving with constant velocity: `frames` positions from (x, y).
    func moving(x: Double, y: Double, dx: Double, dy: Double = 0, width: Double = 60, height: Double = 60, frames: Int) -> [Rect?] {
        (0..<frames).map { Rect(x: x + dx * Double($0), y: y + dy * Double($0), width: width, height: height) }
    }

    /// `boxes` with the given frames removed (not detected).
    func hiding(_ boxes: [Rect?], _ frames: [Int]) -> [Rect?] {
        var result = boxes
        for frame in frames where frame < result.count { result[frame] = nil }
        return result
    }

    /// The distinct IDs an object had over the frames where it was detected.
    func distinctIDs(_ ids: [Int?]) -> [Int] {
        var seen: [Int] = []
        for case let id? in ids where seen.last != id { if !seen.contains(id) { seen.append(id) } }
        return seen
    }

    // MARK: Default settings (bridging up to 2 missed frames)

    /// Three objects: two crossing each other (one hidden behind the other for 2 frames while they
    /// overlap), one nearly still with seeded jitter and a 2-frame miss, one missed for a single
    /// frame. No ID ever changes while an object is visible, and the missed frames are bridged.
    func testMovingCrossingAndBrieflyMissedObjectsKeepTheirIDs() {
        let frames = 32
        var generator = SeededGenerator(seed: 7)
        // A moves right, B moves left 20 px lower: they overlap around frames 15-20 and cross at 17.5.
        let a = hiding(moving(x: 20, y: 100, dx: 8, frames: frames), [5])
        let b = hiding(moving(x: 300, y: 120, dx: -8, frames: frames), [17, 18])
        // C jitters by up to ±3 px around a fixed place.
        let c: [Rect?] = hiding((0..<frames).map { _ in
            Rect(x: 400 + Double(Int.random(in: -3...3, using: &generator)), y: 300 + Double(Int.random(in: -3...3, using: &generator)),
                 width: 40, height: 80)
        }, [10, 11])
        // D appears later, moves diagonally and shrinks slowly (approaching the camera backwards).
        let d: [Rect?] = [Rect?](repeating: nil, count: 6) + (0..<(frames - 6)).map { i in
            Rect(x: 500 - 5 * Double(i), y: 20 + 4 * Double(i), width: 90 - Double(i), height: 70 - 0.8 * Double(i))
        }
        let truths = [Truth(name: "A", boxes: a), Truth(name: "B", boxes: b), Truth(name: "C", boxes: c, classIndex: 3),
                      Truth(name: "D", boxes: hiding(d, [20]), classIndex: 5)]
        let tracker = ObjectTracker()
        XCTAssertEqual(tracker.maximumMissedFrames, 2)
        let (ids, tracks) = run(truths, tracker: tracker)
        var firstIDs: [Int] = []
        for (index, truth) in truths.enumerated() {
            let distinct = distinctIDs(ids[index])
            XCTAssertEqual(distinct.count, 1, "\(truth.name) changed ID: \(ids[index].map { $0.map(String.init) ?? "-" })")
            firstIDs.append(distinct.first ?? -1)
        }
        // IDs are 0, 1, 2, ... in order of first appearance; A, B, C appear in frame 0 (in shuffled
        // order), D in frame 6.
        XCTAssertEqual(Set(firstIDs[0..<3]), [0, 1, 2])
        XCTAssertEqual(firstIDs[3], 3)
        // Bridged frames: the object's track is still returned, without a detection, at a predicted
        // place that overlaps the true (undetected) position well.
        let full: [(Int, [Rect?], [Int])] = [(0, moving(x: 20, y: 100, dx: 8, frames: frames), [5]),
                                               (1, moving(x: 300, y: 120, dx: -8, frames: frames), [17, 18])]
        for (object, truth, missed) in full {
            for frame in missed {
                let track = tracks[frame].first { $0.id == firstIDs[object] }
                XCTAssertNotNil(track, "\(truths[object].name) dropped in frame \(frame)")
                XCTAssertNil(track?.detection)
                XCTAssertEqual(track?.missedFrames, missed.firstIndex(of: frame).map { $0 + 1 })
                if let track, let real = truth[frame] {
                    XCTAssertGreaterThan(track.rect.iou(real), 0.6, "\(truths[object].name) frame \(frame): predicted \(track.rect), real \(real)")
                }
            }
        }
        // C's misses are bridged too (it is still listed while undetected).
        for frame in [10, 11] { XCTAssertTrue(tracks[frame].contains { $0.id == firstIDs[2] && $0.detection == nil }) }
        // No ID beyond the four objects was ever created.
        XCTAssertEqual(Set(tracks.flatMap { $0.map(\.id) }), Set(firstIDs))
    }

    /// Two objects of the same size on nearly the same line (6 px apart), both detected in every
    /// frame, with different speeds (the faster one overtakes the slower one): no swap.
    func testOvertakingObjectsDoNotSwapIDs() {
        let frames = 40
        let slow = moving(x: 100, y: 200, dx: 3, frames: frames)
        let fast = moving(x: 10, y: 206, dx: 9, frames: frames)
        let truths = [Truth(name: "slow", boxes: slow), Truth(name: "fast", boxes: fast)]
        for seed in UInt64(1)...5 {
            let (ids, _) = run(truths, tracker: ObjectTracker(), seed: seed)
            XCTAssertEqual(distinctIDs(ids[0]).count, 1, "seed \(seed): slow \(ids[0])")
            XCTAssertEqual(distinctIDs(ids[1]).count, 1, "seed \(seed): fast \(ids[1])")
            XCTAssertNotEqual(distinctIDs(ids[0]), distinctIDs(ids[1]))
        }
    }

    /// An object that is away for exactly `maximumMissedFrames` frames keeps its ID; one frame
    /// longer and it comes back with a new ID (ML Kit: no re-identification). IDs are never reused.
    func testReentryAfterLongerAbsenceGetsANewIDByDefault() {
        let still = Rect(x: 50, y: 60, width: 100, height: 80)
        // Present 0-4, gone 5-6 (2 frames: bridged), present 7-9, gone 10-12 (3 frames: retired),
        // present 13-15.
        var boxes = [Rect?](repeating: still, count: 16)
        for frame in [5, 6, 10, 11, 12] { boxes[frame] = nil }
        let (ids, tracks) = run([Truth(name: "still", boxes: boxes)], tracker: ObjectTracker())
        XCTAssertEqual(ids[0].compactMap { $0 }, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1])
        // While retired (frame 12 is the third missed frame) nothing is returned.
        XCTAssertTrue(tracks[12].isEmpty, "\(tracks[12])")
        XCTAssertEqual(tracks[11].map(\.missedFrames), [2])

        // A moving object leaves the view (no detections for 6 frames) and re-enters from the other
        // side: a new ID.
        let frames = 30
        var lap = moving(x: 400, y: 100, dx: 12, frames: frames)
        for frame in 10..<16 { lap[frame] = nil }
        for frame in 16..<frames { lap[frame] = Rect(x: -40 + 12 * Double(frame - 16), y: 100, width: 60, height: 60) }
        let (lapIDs, _) = run([Truth(name: "lap", boxes: lap)], tracker: ObjectTracker())
        XCTAssertEqual(distinctIDs(lapIDs[0]), [0, 1])
        XCTAssertEqual(lapIDs[0][9], 0)
        XCTAssertEqual(lapIDs[0][16], 1)
    }

    /// With `maximumMissedFrames` raised, an object hidden behind an occluder for longer (moving on
    /// at constant speed, or standing still) keeps its ID; absences longer than the setting still
    /// give new IDs.
    func testRaisedMaximumMissedFramesKeepsIDsThroughLongerOcclusion() {
        let frames = 40
        // Moves right at 6 px/frame, hidden for 8 frames (12-19) behind something.
        let walker = hiding(moving(x: 10, y: 50, dx: 6, frames: frames), Array(12..<20))
        // Stands still, hidden for 6 frames (20-25).
        let sitter = hiding([Rect?](repeating: Rect(x: 300, y: 300, width: 70, height: 120), count: frames), Array(20..<26))
        let truths = [Truth(name: "walker", boxes: walker), Truth(name: "sitter", boxes: sitter)]

        let patient = ObjectTracker(maximumMissedFrames: 10)
        XCTAssertEqual(patient.maximumMissedFrames, 10)
        let (ids, tracks) = run(truths, tracker: patient)
        XCTAssertEqual(distinctIDs(ids[0]).count, 1, "walker: \(ids[0])")
        XCTAssertEqual(distinctIDs(ids[1]).count, 1, "sitter: \(ids[1])")
        // While hidden, the walker's predicted box keeps moving with it.
        if let id = ids[0][0], let predicted = tracks[19].first(where: { $0.id == id }), let real = moving(x: 10, y: 50, dx: 6, frames: frames)[19] {
            XCTAssertGreaterThan(predicted.rect.iou(real), 0.5, "predicted \(predicted.rect), real \(real)")
        } else {
            XCTFail("the walker's track is missing in frame 19")
        }

        // The same scenario with the default setting: both come back with new IDs.
        let (defaultIDs, _) = run(truths, tracker: ObjectTracker())
        XCTAssertEqual(distinctIDs(defaultIDs[0]).count, 2, "walker: \(defaultIDs[0])")
        XCTAssertEqual(distinctIDs(defaultIDs[1]).count, 2, "sitter: \(defaultIDs[1])")

        // Absent for longer than the raised setting: a new ID after all.
        var away = [Rect?](repeating: Rect(x: 30, y: 30, width: 50, height: 50), count: 30)
        for frame in 5..<17 { away[frame] = nil }    // 12 frames > 10
        let (awayIDs, _) = run([Truth(name: "away", boxes: away)], tracker: ObjectTracker(maximumMissedFrames: 10))
        XCTAssertEqual(distinctIDs(awayIDs[0]), [0, 1])
        var back = away
        for frame in 15..<17 { back[frame] = Rect(x: 30, y: 30, width: 50, height: 50) }    // 10 frames = the limit
        let (backIDs, _) = run([Truth(name: "back", boxes: back)], tracker: ObjectTracker(maximumMissedFrames: 10))
        XCTAssertEqual(distinctIDs(backIDs[0]), [0])
    }

    /// `maximumMissedFrames` 0 retires an object at its first miss; negative values are taken as 0.
    func testZeroMissedFramesAndReset() {
        var boxes = [Rect?](repeating: Rect(x: 0, y: 0, width: 40, height: 40), count: 6)
        boxes[3] = nil
        for tracker in [ObjectTracker(maximumMissedFrames: 0), ObjectTracker(maximumMissedFrames: -4)] {
            XCTAssertEqual(tracker.maximumMissedFrames, 0)
            let (ids, tracks) = run([Truth(name: "blink", boxes: boxes)], tracker: tracker)
            XCTAssertEqual(ids[0].compactMap { $0 }, [0, 0, 0, 1, 1])
            XCTAssertTrue(tracks[3].isEmpty)
        }
        // reset() forgets objects but IDs keep increasing.
        let tracker = ObjectTracker()
        let box = DetectedBox(rect: Rect(x: 10, y: 10, width: 30, height: 30), classIndex: 1, score: 0.9, label: "cup")
        XCTAssertEqual(tracker.update([box]).map(\.id), [0])
        XCTAssertEqual(tracker.update([box]).map(\.id), [0])
        tracker.reset()
        XCTAssertTrue(tracker.tracks.isEmpty)
        XCTAssertEqual(tracker.update([box]).map(\.id), [1])
        XCTAssertEqual(tracker.update([]).map(\.id), [1])
        XCTAssertEqual(tracker.tracks.first?.detection, nil)
        XCTAssertEqual(tracker.tracks.first?.hits, 1)
    }

    /// Many objects appearing and disappearing at random (seeded) places: IDs are assigned from 0
    /// upwards in order of first appearance, are never reused, and are always non-negative.
    func testIDsAreNonNegativeIncreasingAndNeverReused() {
        var generator = SeededGenerator(seed: 42)
        let tracker = ObjectTracker()
        var seen: [Int] = []
        var retired = Set<Int>()
        var previous = Set<Int>()
        for _ in 0..<60 {
            let count = Int.random(in: 0...5, using: &generator)
            let boxes = (0..<count).map { _ in
                DetectedBox(rect: Rect(x: Double(Int.random(in: 0...600, using: &generator)), y: Double(Int.random(in: 0...400, using: &generator)),
                                       width: 50, height: 50), classIndex: 0, score: 0.5, label: nil)
            }
            let ids = Set(tracker.update(boxes).map(\.id))
            for id in ids.sorted() where !seen.contains(id) {
                XCTAssertEqual(id, seen.count, "IDs are handed out in order")
                seen.append(id)
            }
            XCTAssertTrue(ids.isDisjoint(with: retired), "a retired ID came back")
            retired.formUnion(previous.subtracting(ids))
            previous = ids
            XCTAssertTrue(ids.allSatisfy { $0 >= 0 })
        }
        XCTAssertGreaterThan(seen.count, 10)
    }
}

/// Tracking end to end through `ObjectDetector` in stream mode (model-sized: release builds only):
/// synthetic frames with objects cut from the shared photographs moving over a plain background,
/// and the shared traffic clip.
final class ObjectTrackerStreamTests: XCTestCase {
    func detector(_ configure: (ObjectDetectorOptions) -> Void) throws -> ObjectDetector {
        let options = ObjectDetectorOptions()
        configure(options)
        return try withSharedModels { try ObjectDetector.objectDetector(options: options) }
    }

    /// The object reported over `rect` (largest overlap, at least `minimum` IoU).
    func reported(_ objects: [Object], over rect: Rect, minimum: Double = 0.5) -> Object? {
        objects.filter { $0.rect.iou(rect) >= minimum }.max { $0.rect.iou(rect) < $1.rect.iou(rect) }
    }

    /// A cat (from cat.bmp) and a cup (from table.jpg), cut out at the golden's boxes, move toward
    /// each other over a plain background, pass with their boxes overlapping (the cup in front),
    /// and the cup is covered by a plain board for 2 frames: each keeps one tracking ID throughout.
    func testPastedObjectsKeepTheirIDsWhileMovingCrossingAndCovered() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let cat = try TestRGBImage.shared("cat.bmp").cropped(x: 44, y: 45, width: 316, height: 289)
        let cup = try TestRGBImage.shared("table.jpg").cropped(x: 68, y: 206, width: 134, height: 171)
        let background: (UInt8, UInt8, UInt8) = (196, 200, 204)
        let (width, height, frames, speed) = (760, 480, 16, 18)
        let covered: Set<Int> = [6, 7]
        func catRect(_ t: Int) -> Rect { Rect(x: Double(10 + speed * t), y: 170, width: 316, height: 289) }
        func cupRect(_ t: Int) -> Rect { Rect(x: Double(600 - speed * t), y: 60, width: 134, height: 171) }
        func frame(_ t: Int) throws -> VisionImage {
            var picture = TestRGBImage(width: width, height: height, fill: background)
            picture.paste(cat, x: Int(catRect(t).x), y: Int(catRect(t).y))
            picture.paste(cup, x: Int(cupRect(t).x), y: Int(cupRect(t).y))
            if covered.contains(t) {
                picture.fill(x: Int(cupRect(t).x) - 10, y: 50, width: 154, height: 191, color: (90, 90, 96))
            }
            return VisionImage(buffer: try picture.pixelBuffer())
        }
        // Setup check: the detector finds both pasted objects on their own, at every position.
        let single = try detector { $0.detectorMode = .singleImage; $0.shouldEnableMultipleObjects = true; $0.shouldEnableClassification = true }
        for t in [0, frames / 2, frames - 1] {
            let objects = try single.results(in: frame(t))
            let catObject = reported(objects, over: catRect(t)), cupObject = reported(objects, over: cupRect(t))
            XCTAssertNotNil(catObject, "frame \(t): the pasted cat is not detected: \(objects.map(\.rect))")
            XCTAssertNotNil(cupObject, "frame \(t): the pasted cup is not detected: \(objects.map(\.rect))")
            XCTAssertEqual(cupObject?.labels.first?.text, "Home good")
            XCTAssertEqual(catObject?.labels, [])
        }

        let stream = try detector { $0.shouldEnableMultipleObjects = true }
        var catIDs: [Int] = [], cupIDs: [Int] = []
        var log: [String] = []
        for t in 0..<frames {
            let objects = try stream.results(in: frame(t))
            XCTAssertLessThanOrEqual(objects.count, 5)
            log.append("\(t): " + objects.map { "\($0.trackingID?.intValue ?? -1)@\($0.rect)" }.joined(separator: " "))
            for object in objects {
                let id = try XCTUnwrap(object.trackingID?.intValue, "stream mode assigns tracking IDs")
                XCTAssertGreaterThanOrEqual(id, 0)
                XCTAssertGreaterThan(object.rect.area, 0, "frame \(t): an empty frame is reported")
            }
            if t == 0 { XCTAssertEqual(Set(objects.compactMap { $0.trackingID?.intValue }), Set(0..<objects.count), "IDs start at 0") }
            if let object = reported(objects, over: catRect(t)), let id = object.trackingID?.intValue {
                catIDs.append(id)
            } else {
                XCTFail("frame \(t): the cat is not reported")
            }
            if !covered.contains(t) {
                if let object = reported(objects, over: cupRect(t)), let id = object.trackingID?.intValue {
                    cupIDs.append(id)
                } else {
                    XCTFail("frame \(t): the cup is not reported")
                }
            }
        }
        XCTAssertEqual(Set(catIDs).count, 1, "cat IDs \(catIDs)\n" + log.joined(separator: "\n"))
        XCTAssertEqual(Set(cupIDs).count, 1, "cup IDs \(cupIDs)\n" + log.joined(separator: "\n"))
        XCTAssertNotEqual(catIDs.first, cupIDs.first)
        print("Pasted objects, stream mode:\n" + log.joined(separator: "\n"))

        // Single-object stream mode: at most one object per frame, with a tracking ID.
        let prominent = try detector { _ in }
        for t in 0..<4 {
            let objects = try prominent.results(in: frame(t))
            XCTAssertLessThanOrEqual(objects.count, 1)
            XCTAssertNotNil(objects.first?.trackingID)
        }
    }

    /// The shared traffic clip (20 frames) in stream mode with multiple objects: at least one
    /// vehicle, visible throughout, keeps one ID over all frames (found as the track present in
    /// every frame); IDs start at 0; at most 5 objects per frame (1 in single-object mode).
    func testTrafficClipKeepsAVehicleID() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let reader = try VideoReader(path: SharedData.videos.appendingPathComponent("traffic_frames.mp4").path)
        let frames = try reader.readFrames()
        XCTAssertEqual(frames.count, 20)
        let multiple = try detector { $0.shouldEnableMultipleObjects = true }
        let single = try detector { _ in }
        var idsPerFrame: [Set<Int>] = []
        var log: [String] = []
        var rects: [Int: [Rect]] = [:]
        for (index, frame) in frames.enumerated() {
            let image = VisionImage(buffer: frame.pixels)
            let objects = try multiple.results(in: image)
            XCTAssertLessThanOrEqual(objects.count, 5)
            XCTAssertTrue(objects.allSatisfy { $0.rect.area > 0 }, "frame \(index): an empty frame is reported")
            let ids = objects.compactMap { $0.trackingID?.intValue }
            XCTAssertEqual(ids.count, objects.count, "every object has a tracking ID")
            XCTAssertTrue(ids.allSatisfy { $0 >= 0 })
            if index == 0 { XCTAssertEqual(Set(ids), Set(0..<ids.count)) }
            idsPerFrame.append(Set(ids))
            for object in objects { rects[object.trackingID!.intValue, default: []].append(object.rect) }
            log.append("\(index) @\(frame.timestampMilliseconds)ms: " + objects.map { "\($0.trackingID!.intValue)@\($0.rect)" }.joined(separator: " "))
            XCTAssertLessThanOrEqual(try single.results(in: image).count, 1)
        }
        let throughout = idsPerFrame.dropFirst().reduce(idsPerFrame[0]) { $0.intersection($1) }
        XCTAssertFalse(throughout.isEmpty, "no object kept its ID over all 20 frames:\n" + log.joined(separator: "\n"))
        // Which of them are vehicles: the COCO SSD's own label of the track's first box. A vehicle
        // kept throughout moves smoothly (consecutive boxes overlap): one vehicle, not a chain of
        // different ones.
        let labelled = try cocoSSDDetections(frames[0].pixels)
        let vehicles = throughout.filter { id in
            guard let first = rects[id]?.first else { return false }
            return labelled.contains { ["car", "truck", "bus", "motorcycle"].contains($0.label ?? "") && $0.rect.iou(first) >= 0.7 }
        }
        XCTAssertFalse(vehicles.isEmpty, "none of the tracks kept throughout (\(throughout.sorted())) is a vehicle: \(labelled.map { "\($0.label ?? "?")@\($0.rect)" })")
        for id in vehicles {
            let boxes = rects[id] ?? []
            XCTAssertEqual(boxes.count, frames.count)
            for (a, b) in zip(boxes, boxes.dropFirst()) { XCTAssertGreaterThan(a.iou(b), 0.3, "track \(id): \(a) -> \(b)") }
        }
        print("Traffic clip, tracks present in every frame: \(throughout.sorted()), vehicles among them: \(vehicles.sorted())\n" + log.joined(separator: "\n"))
    }
}
