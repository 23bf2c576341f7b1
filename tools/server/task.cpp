#include "task.hpp"

namespace tessel::server {

void Task::emit(std::string piece) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        pieces_.push_back(std::move(piece));
    }
    cv_.notify_all();
}

void Task::finish(TaskResult result) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        result_ = std::move(result);
    }
    cv_.notify_all();
}

std::optional<std::string> Task::next(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !pieces_.empty() || result_.has_value(); });
    if (pieces_.empty()) return std::nullopt;
    std::string p = std::move(pieces_.front());
    pieces_.pop_front();
    return p;
}

std::optional<TaskResult> Task::result() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pieces_.empty()) return std::nullopt;
    return result_;
}

}  // namespace tessel::server
