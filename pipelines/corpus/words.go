package corpus

import "reflect"

var reflectDoc = reflect.TypeFor[Doc]()

type topic struct {
	name  string
	words []string
}

// topics and their vocabularies. The order is part of the corpus: changing
// it changes every seed's documents.
var topics = []topic{
	{"astronomy", []string{"comet", "nebula", "orbit", "telescope", "galaxy", "eclipse", "meteor", "quasar", "parallax", "redshift", "apogee", "planet", "moon", "pulsar", "zenith", "aurora"}},
	{"baking", []string{"flour", "yeast", "crust", "oven", "dough", "sourdough", "butter", "knead", "proof", "crumb", "glaze", "rye", "starter", "loaf", "pastry", "whisk"}},
	{"cycling", []string{"saddle", "gear", "cadence", "climb", "peloton", "spoke", "chain", "derailleur", "sprint", "descent", "tubeless", "crank", "jersey", "pedal", "frame", "wheel"}},
	{"geology", []string{"basalt", "granite", "fault", "magma", "sediment", "quartz", "strata", "erosion", "glacier", "fossil", "mantle", "crust", "schist", "feldspar", "tectonic", "lava"}},
	{"jazz", []string{"swing", "bebop", "chord", "solo", "trumpet", "saxophone", "groove", "standard", "blues", "improvise", "rhythm", "bass", "quartet", "modal", "scat", "tempo"}},
	{"sailing", []string{"keel", "jib", "tack", "harbour", "anchor", "mast", "rudder", "gybe", "halyard", "mooring", "starboard", "port", "tide", "squall", "reef", "bow"}},
	{"chess", []string{"gambit", "rook", "bishop", "castle", "endgame", "pawn", "knight", "fork", "pin", "opening", "stalemate", "queen", "tempo", "zugzwang", "blitz", "check"}},
	{"botany", []string{"fern", "pollen", "root", "stem", "leaf", "photosynthesis", "seed", "orchid", "moss", "xylem", "petal", "bark", "sapling", "bloom", "lichen", "spore"}},
}

var common = []string{
	"the", "a", "of", "and", "in", "on", "with", "for", "under", "over", "after", "before",
	"quiet", "bright", "old", "new", "early", "late", "small", "vast", "careful", "sudden",
	"season", "morning", "evening", "journal", "notes", "story", "field", "river", "city", "coast",
	"is", "was", "seems", "becomes", "remains", "turns", "holds", "carries", "finds", "keeps",
}
