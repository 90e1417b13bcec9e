/*
 * Linked into the release library only (scripts/release.sh). That library carries libstdc++
 * statically, and the C++ compiler's libstdc++.a is built against the build system's glibc: its
 * std::random_device calls arc4random, which glibc has had only since 2.36, while everything else
 * the library calls is in glibc 2.34. This definition answers those calls from the kernel, as
 * glibc's own arc4random does, through getrandom (glibc 2.25), so the library needs glibc 2.34
 * (docs/install.md, checked by tests/artifact.rs). The plugin's version script keeps it local to
 * the library: no other code in the process sees it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

uint32_t arc4random(void) {
    uint32_t value;
    size_t filled = 0;
    while (filled < sizeof value) {
        ssize_t got = getrandom((char *)&value + filled, sizeof value - filled, 0);
        if (got > 0) {
            filled += (size_t)got;
        } else if (got < 0 && errno != EINTR) {
            /* As glibc: without the kernel's randomness there is no safe value to return. */
            abort();
        }
    }
    return value;
}
