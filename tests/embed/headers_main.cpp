// The embed-headers program: every public header was compiled alone (one generated TU
// each, linked in here); running it only proves the result links against libdshpty.so.
int main() { return 0; }
