// Where --generate's text goes: stdout carries the text alone (so `train_gpt ... --generate 100 > out.txt`
// keeps just the text), and everything else the process prints on stdout (the start-up summary, the device,
// the memory plan) goes to stderr instead. Construct it before anything is printed.
#pragma once
#include <cstdio>
#include <string>

class TextOutput {
  public:
    // Points stdout's file descriptor at stderr's and keeps the original one for the text.
    TextOutput();
    ~TextOutput();
    TextOutput(const TextOutput&) = delete;
    TextOutput& operator=(const TextOutput&) = delete;
    // Appends a token's (or the prompt's) bytes and writes, flushed, what forms complete UTF-8 so far
    // (invalid bytes as U+FFFD, as sanitize_utf8 does to the whole text); a character split across tokens
    // waits for its last byte.
    void write(const std::string& bytes);
    // Writes what is held back and a newline.
    void finish();

  private:
    FILE* text_ = nullptr;
    std::string pending_;
};
