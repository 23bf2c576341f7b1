// The two links behind open_link() (link.hpp), one translation unit each.
#pragma once

#include <memory>

#include "npu/link/link.hpp"

namespace tessel::npu {

/// The device runtime on a thread of this process. Throws tessel::Error as open_link() does.
std::unique_ptr<Link> open_inproc_link(const LinkOptions& options);

/// A `tessel npu-device` child process. Throws tessel::Error(Io) as open_link() does.
std::unique_ptr<Link> open_process_link(const LinkOptions& options);

}  // namespace tessel::npu
