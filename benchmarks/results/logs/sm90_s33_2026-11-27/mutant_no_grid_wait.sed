s/^  grid_dependency_wait();$/  \/\/ (mutant: no grid dependency wait)/
s/^  grid_dependency_wait();  \/\/ (as in produce.*$/  \/\/ (mutant: no grid dependency wait)/
