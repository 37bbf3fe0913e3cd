// Checks of the files and folders a flag names, made before anything is read or written: a reader must not
// block on a FIFO (or a device) given in place of a file, and a folder is writable only if a file can really
// be created in it (access(W_OK) says yes for root and on /proc). Host-only.
#pragma once
#include <string>

// Opens `path` read-only without blocking, then keeps it only if it is a regular file. Returns the descriptor
// (O_CLOEXEC, reads block again) or -1 with *error set to one line: "cannot open: <reason>" or "not a regular
// file (a FIFO)" (a folder, a device, a socket).
int open_regular_file(const std::string& path, std::string* error);

// "" if a file can be created in the folder `dir` (by creating and removing an empty one), else the reason in
// one line: "'dir' is not a folder" or "cannot create a file in 'dir': <reason>".
std::string file_creatable_in(const std::string& dir);
