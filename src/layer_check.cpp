// layer_check_<folder> (CMakeLists.txt): every object of one folder's library, linked with only
// the folders below it; this main() is all they add.
int main() { return 0; }
