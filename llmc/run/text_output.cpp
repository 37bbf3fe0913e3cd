#include "llmc/run/text_output.h"

#include <unistd.h>

#include <stdexcept>

#include "llmc/formats/tokenizer.h"

TextOutput::TextOutput() {
    fflush(stdout);
    const int text_fd = dup(STDOUT_FILENO);
    if (text_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || !(text_ = fdopen(text_fd, "w")))
        throw std::runtime_error("cannot set stdout aside for the generated text");
}

TextOutput::~TextOutput() {
    if (text_) fclose(text_);
}

void TextOutput::write(const std::string& bytes) {
    pending_ += bytes;
    const size_t complete = utf8_complete_prefix(pending_);
    const std::string text = sanitize_utf8(pending_.substr(0, complete));
    fwrite(text.data(), 1, text.size(), text_);
    fflush(text_);
    pending_.erase(0, complete);
}

void TextOutput::finish() {
    const std::string text = sanitize_utf8(pending_) + "\n";
    fwrite(text.data(), 1, text.size(), text_);
    fflush(text_);
    pending_.clear();
}
