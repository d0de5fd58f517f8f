// The toolkit's version and the git commit it was built from ("<sha>-dirty" for uncommitted changes).
#pragma once

namespace saddlescope {
const char* toolkit_version();
const char* toolkit_commit();
}  // namespace saddlescope
