s/  return dram_scarce(bytes) ? 8 : 16;/  return 16;  \/\/ (session 33 run 10: the H200's rule forced)/
s/  return dram_scarce(bytes) ? 0xffffffffu : 0x2u;/  return 0x2u;  \/\/ (session 33 run 10: the H200's rule forced)/
