# Included by the cmake -P test scripts of this folder: sets COMMAND to the arguments after "--" (the program to
# run and its arguments), the one place that reads a script's command line.
set(COMMAND "")
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND COMMAND "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
