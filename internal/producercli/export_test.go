package producercli

// Publish exposes publish (a batch line's publish, sent again through an
// outage) to the external tests.
var Publish = publish
