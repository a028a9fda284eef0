"""Where a member's untrusted shell commands run: the sandbox policy (bubblewrap, a PID
namespace, the process cap) and the command runner; below the member and the supervisor,
which both run commands (a member's, a resource's cleanup), so neither imports the other."""
