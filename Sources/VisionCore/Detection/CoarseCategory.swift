/// ML Kit's coarse object categories, with ML Kit's texts and indices.
public enum CoarseCategory: Int, Sendable, Hashable, CaseIterable {
    case fashionGood = 0, homeGood = 1, food = 2, place = 3, plant = 4

    /// ML Kit's label text.
    public var text: String {
        switch self {
        case .fashionGood: return "Fashion good"
        case .homeGood: return "Home good"
        case .food: return "Food"
        case .place: return "Place"
        case .plant: return "Plant"
        }
    }

    /// The coarse category of a COCO class name (the default detector's labels), or nil when no
    /// category fits (people, animals, vehicles, sports equipment, ...): ML Kit then returns the
    /// object without a label ("unknown").
    ///
    /// Mapping (documented in ARCHITECTURE.md): Fashion good — clothing and accessories people
    /// wear or carry (backpack, umbrella, handbag, tie, suitcase, hat, shoe, eye glasses);
    /// Home good — furniture, appliances, electronics, tableware and household objects; Food —
    /// the COCO food classes; Plant — potted plant; Place — place-like labels of custom detection
    /// models (building, house, bridge, tower, room, kitchen, restaurant, store, street). No COCO
    /// object class describes a place, so the default detector never reports Place.
    public init?(cocoLabel: String) {
        switch cocoLabel.lowercased() {
        case "backpack", "umbrella", "handbag", "tie", "suitcase", "hat", "shoe", "eye glasses":
            self = .fashionGood
        case "chair", "couch", "bed", "dining table", "desk", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
             "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "blender", "book", "clock", "vase",
             "scissors", "teddy bear", "hair drier", "toothbrush", "bottle", "plate", "wine glass", "cup", "fork",
             "knife", "spoon", "bowl", "mirror", "window", "door":
            self = .homeGood
        case "banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake":
            self = .food
        case "potted plant", "plant", "flower", "tree":
            self = .plant
        case "building", "house", "bridge", "tower", "room", "kitchen", "restaurant", "store", "street":
            self = .place
        default:
            return nil
        }
    }
}
