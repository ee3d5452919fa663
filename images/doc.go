// Package images builds mcpsandbox's runtime images from the host's own
// files and imports them into the local Docker engine, so that no registry
// is ever needed. Each image is described by images/<name>/manifest, tagged
// mcpsandbox/<name>:<content-hash> and :latest, and rebuilt only when its
// inputs change.
package images
