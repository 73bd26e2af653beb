package uring

// UserData is the 64-bit tag a submission carries and its completions return.
// Pack lays it out as an operation kind (8 bits), a connection generation (24
// bits) and a connection index (32 bits), so that a completion arriving after
// its connection was closed and its slot reused carries a generation that no
// longer matches and is dropped (the role of Go netpoll's fdseq). The package
// gives no kind a meaning: kinds are the engine's. The zero value is kind 0,
// index 0, generation 0.
type UserData uint64

// GenBits is the width of the generation in a UserData; generations wrap
// modulo 1<<GenBits, so compare them for equality only.
const GenBits = 24

// GenMask masks a generation to GenBits.
const GenMask = 1<<GenBits - 1

// Pack returns the UserData for an operation of the given kind on the
// connection at index with generation gen (only its low GenBits are kept).
func Pack(kind uint8, index uint32, gen uint32) UserData {
	return UserData(uint64(kind)<<56 | uint64(gen&GenMask)<<32 | uint64(index))
}

// Kind returns the operation kind packed in u.
func (u UserData) Kind() uint8 { return uint8(u >> 56) }

// Index returns the connection index packed in u.
func (u UserData) Index() uint32 { return uint32(u) }

// Gen returns the generation packed in u.
func (u UserData) Gen() uint32 { return uint32(u>>32) & GenMask }
