package ioflush

// Consume exposes the pure queue-advancing step of Flush.
var Consume = consume
